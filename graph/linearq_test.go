package graph_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestLinearQ checks the weight-only quantized product against its
// definition in float64, for uint8 and int8 weights, a batched input, and a
// weight given as a parameter or fed at run time.
func TestLinearQ(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const B, M, K, N = 2, 3, 70, 9
	for _, dt := range []graph.DType{graph.U8, graph.I8} {
		xa := kerneltest.RandND(rng, -2, 2, B, M, K).Round32()
		h := newHarness(t)
		g := h.g
		x := h.in(xa)
		wq := make([]byte, N*K)
		for i := range wq {
			wq[i] = byte(rng.IntN(256))
		}
		zero := byte(131)
		if dt == graph.I8 {
			zero = byte(0xF9) // -7
		}
		const scale = float32(0.031)
		s := g.Scalar(float64(scale), graph.F32)
		z := g.Const(dt, graph.Shape{}, []byte{zero})
		y1 := x.LinearQ(g.Param("w", dt, graph.Shape{N, K}, wq), s, z)
		y2 := x.LinearQ(g.InputBytes("wq", dt, graph.Shape{N, K}, wq), s, z)
		vals := h.eval(y1, y2)
		val := func(b byte) float64 {
			if dt == graph.I8 {
				return float64(int8(b))
			}
			return float64(b)
		}
		for k, v := range vals {
			if !v.Shape.Equal(graph.Shape{B, M, N}) {
				t.Fatalf("%s: shape %v", dt, v.Shape)
			}
			got := v.Float64s()
			for r := range B * M {
				for j := range N {
					var want, mag float64
					for p := range K {
						w := (val(wq[j*K+p]) - val(zero)) * float64(scale)
						want += xa.Data[r*K+p] * w
						mag += math.Abs(xa.Data[r*K+p] * w)
					}
					if d := math.Abs(got[r*N+j] - want); d > float64(K+2)*0x1p-23*mag {
						t.Fatalf("%s output %d: [%d,%d] = %v, want %v", dt, k, r, j, got[r*N+j], want)
					}
				}
			}
		}
	}
}

func TestLinearQRejectsBadOperands(t *testing.T) {
	g := graph.New()
	x := g.Input("x", graph.F32, graph.Shape{2, 8})
	w := g.Input("w", graph.U8, graph.Shape{4, 8})
	s := g.Scalar(1, graph.F32)
	z := g.Const(graph.U8, graph.Shape{}, []byte{0})
	for name, y := range map[string]graph.Tensor{
		"inner extents differ": x.LinearQ(g.Input("w2", graph.U8, graph.Shape{4, 7}), s, z),
		"float weight":         x.LinearQ(g.Input("w3", graph.F32, graph.Shape{4, 8}), s, z),
		"zero point dtype":     x.LinearQ(w, s, g.Const(graph.I8, graph.Shape{}, []byte{0})),
		"per-channel scale":    x.LinearQ(w, g.Input("s", graph.F32, graph.Shape{4}), z),
		"integer input":        g.Input("xi", graph.I64, graph.Shape{2, 8}).LinearQ(w, s, z),
	} {
		if y.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestLinearQInt16OptionIsPartOfTheProgram: LinearQOpts.Int16 reaches the
// kernel attribute (a product with and without it compiles to two
// programs), and the zero options leave the product as LinearQ makes it.
func TestLinearQInt16OptionIsPartOfTheProgram(t *testing.T) {
	eng := graph.NewEngine(cpu.New())
	x := make([]float32, 2*64)
	w := make([]byte, 3*64)
	for _, c := range []struct {
		name     string
		opts     *graph.LinearQOpts // nil: LinearQ
		programs int64              // compiled after this one
	}{
		{"LinearQ", nil, 1},
		{"LinearQWith zero", &graph.LinearQOpts{}, 1},
		{"LinearQWith Int16", &graph.LinearQOpts{Int16: true}, 2},
	} {
		g := graph.New()
		xt, wt := g.InputF32("x", graph.Shape{2, 64}, x), g.InputBytes("w", graph.U8, graph.Shape{3, 64}, w)
		s, z := g.Scalar(0.5, graph.F32), g.Const(graph.U8, graph.Shape{}, []byte{3})
		y := xt.LinearQ(wt, s, z)
		if c.opts != nil {
			y = xt.LinearQWith(wt, s, z, *c.opts)
		}
		if _, err := eng.Eval(context.Background(), y); err != nil {
			t.Fatal(err)
		}
		if n := eng.Compiles(); n != c.programs {
			t.Errorf("after %s: %d programs compiled, want %d", c.name, n, c.programs)
		}
	}
}
