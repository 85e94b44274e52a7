package cpu_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// TestLinearQInt16Option runs x·((w − z)·s)ᵀ with LinearQOpts.Int16 for
// uint8 and int8 weights (a parameter, and an input): on a CPU with an
// 8-bit dot-product unit it must equal float64 on the unrounded x within
// the 16-bit grid's bound (each row's largest magnitude / 65,278 per
// element, times Σ|w − z|·s) and differ from the float32 product (the
// option reached the kernel); elsewhere, or at a depth the kernel does
// not take, it must be LinearQ's float32 product bit for bit.
func TestLinearQInt16Option(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	eng := graph.NewEngine(cpu.New())
	for _, c := range []struct {
		m, n, k int
		dt      graph.DType
		zero    byte
		param   bool
	}{{3, 130, 384, graph.U8, 131, true}, {1, 70, 512, graph.I8, 0xF9, false}, {2, 33, 100, graph.U8, 7, true}} {
		x := randF32(r, c.m*c.k)
		w := make([]byte, c.n*c.k)
		for i := range w {
			w[i] = byte(r.IntN(256))
		}
		const scale = 0.031
		g := graph.New()
		xt := g.InputF32("x", graph.Shape{c.m, c.k}, x)
		wt := g.InputBytes("w", c.dt, graph.Shape{c.n, c.k}, w)
		if c.param {
			wt = g.Param("w", c.dt, graph.Shape{c.n, c.k}, w)
		}
		s, z := g.Scalar(scale, graph.F32), g.Const(c.dt, graph.Shape{}, []byte{c.zero})
		vals, err := eng.Eval(context.Background(), xt.LinearQWith(wt, s, z, graph.LinearQOpts{Int16: true}), xt.LinearQ(wt, s, z))
		if err != nil {
			t.Fatal(err)
		}
		got, f32 := vals[0].F32(), vals[1].F32()
		val := func(b byte) float64 {
			if c.dt == graph.I8 {
				return float64(int8(b))
			}
			return float64(b)
		}
		rounded := gemm.Int16Path() != "" && c.k%64 == 0
		differs := false
		for i := range c.m {
			var mx float64
			for _, v := range x[i*c.k : (i+1)*c.k] {
				mx = max(mx, math.Abs(float64(v)))
			}
			for j := range c.n {
				y := got[i*c.n+j]
				if !rounded {
					if y != f32[i*c.n+j] {
						t.Fatalf("%+v: y[%d,%d] = %v, LinearQ gives %v", c, i, j, y, f32[i*c.n+j])
					}
					continue
				}
				differs = differs || y != f32[i*c.n+j]
				var want, wq float64
				for p := range c.k {
					d := val(w[j*c.k+p]) - val(c.zero)
					want += float64(x[i*c.k+p]) * d * scale
					wq += math.Abs(d) * scale
				}
				bound := wq*mx/65278*(1+1e-9) + math.Abs(want)*0x1p-23
				if d := math.Abs(float64(y) - want); !(d <= bound) {
					t.Fatalf("%+v: y[%d,%d] = %v, want %v (|diff| %.3g > %.3g)", c, i, j, y, want, d, bound)
				}
			}
		}
		if rounded && !differs {
			t.Errorf("%+v: Int16 gave the float32 product exactly: the option did not reach the kernel", c)
		}
	}
}
