package cpu_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// convRef is conv1d in float64 with the bound Σ|w·x| + |b| per output.
func convRef(x, w, b []float32, N, Cin, L, Cout, K, stride, padL, padR, dil, groups int) (want, mag []float64, Lout int) {
	Lout = (L+padL+padR-dil*(K-1)-1)/stride + 1
	cig, cog := Cin/groups, Cout/groups
	want, mag = make([]float64, N*Cout*Lout), make([]float64, N*Cout*Lout)
	for n := 0; n < N; n++ {
		for co := 0; co < Cout; co++ {
			g := co / cog
			for t := 0; t < Lout; t++ {
				var s, sa float64
				if b != nil {
					s, sa = float64(b[co]), math.Abs(float64(b[co]))
				}
				for ci := 0; ci < cig; ci++ {
					for k := 0; k < K; k++ {
						if i := t*stride + k*dil - padL; i >= 0 && i < L {
							p := float64(w[(co*cig+ci)*K+k]) * float64(x[(n*Cin+g*cig+ci)*L+i])
							s += p
							sa += math.Abs(p)
						}
					}
				}
				want[(n*Cout+co)*Lout+t], mag[(n*Cout+co)*Lout+t] = s, sa
			}
		}
	}
	return want, mag, Lout
}

func bytesOf(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

func randF32(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	return x
}

// TestConv1dPaths runs convolutions whose weight is a constant (packed once
// per backend and reused) and one computed in the program (packed per
// call), with batches and groups, against float64. Each constant weight
// runs twice with different inputs, so a stale packing would show.
func TestConv1dPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		n, cin, cout, l, k, stride, padL, padR, dil, groups int
	}{
		{1, 128, 128, 700, 11, 1, 25, 25, 5, 1}, // Kokoro generator block
		{2, 6, 9, 50, 3, 1, 1, 1, 1, 3},         // batch and groups
		{1, 22, 16, 301, 12, 6, 3, 3, 1, 1},     // noise_convs: stride 6
		{1, 1, 4, 40, 3, 2, 1, 1, 1, 1},         // F0_conv: one channel, stride 2
		{1, 40, 30, 5, 3, 1, 1, 1, 1, 1},        // shorter than a sliver
		{1, 17, 1, 90, 7, 1, 3, 3, 1, 1},        // one output channel
	}
	eng := graph.NewEngine(cpu.New())
	for _, c := range cases {
		for _, constW := range []bool{true, false} {
			name := fmt.Sprintf("%+v/const=%v", c, constW)
			w := randF32(r, c.cout*c.cin/c.groups*c.k)
			bias := randF32(r, c.cout)
			for run := 0; run < 2; run++ {
				x := randF32(r, c.n*c.cin*c.l)
				g := graph.New()
				xt := g.InputF32("x", graph.Shape{c.n, c.cin, c.l}, x)
				ws := graph.Shape{c.cout, c.cin / c.groups, c.k}
				var wt graph.Tensor
				if constW {
					wt = g.Param("w", graph.F32, ws, bytesOf(w))
				} else {
					wt = g.InputF32("w", ws, w)
				}
				bt := g.Param("b", graph.F32, graph.Shape{c.cout}, bytesOf(bias))
				y := xt.Conv1d(wt, bt, graph.ConvOpts{Stride: c.stride, PadLeft: c.padL, PadRight: c.padR, Dilation: c.dil, Groups: c.groups})
				vals, err := eng.Eval(context.Background(), y)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got := vals[0].F32()
				want, mag, _ := convRef(x, w, bias, c.n, c.cin, c.l, c.cout, c.k, c.stride, c.padL, c.padR, c.dil, c.groups)
				if len(got) != len(want) {
					t.Fatalf("%s: %d outputs, want %d", name, len(got), len(want))
				}
				eps := float64(c.cin*c.k+2) * 0x1p-23
				for i := range want {
					if d := math.Abs(float64(got[i]) - want[i]); !(d <= eps*mag[i]+1e-30) {
						t.Fatalf("%s run %d: y[%d] = %v, want %v (|diff| %.3g > %.3g)", name, run, i, got[i], want[i], d, eps*mag[i])
					}
				}
			}
		}
	}
}

// TestMatMulConstantWeight runs x·Wᵀ with W a constant (packed once per
// backend on the Go GEMM path, then reused) for batched and plain x, and a
// run-time B, against float64.
func TestMatMulConstantWeight(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	eng := graph.NewEngine(cpu.New())
	for _, c := range []struct{ batch, m, n, k int }{{1, 55, 768, 768}, {3, 7, 33, 900}, {1, 1, 70, 50}, {2, 30, 5, 3}} {
		w := randF32(r, c.n*c.k)
		for run := 0; run < 2; run++ {
			x := randF32(r, c.batch*c.m*c.k)
			for _, constW := range []bool{true, false} {
				g := graph.New()
				xt := g.InputF32("x", graph.Shape{c.batch, c.m, c.k}, x)
				var wt graph.Tensor
				if constW {
					wt = g.Param("w", graph.F32, graph.Shape{c.n, c.k}, bytesOf(w))
				} else {
					wt = g.InputF32("w", graph.Shape{c.n, c.k}, w)
				}
				vals, err := eng.Eval(context.Background(), xt.MatMul(wt.T()))
				if err != nil {
					t.Fatal(err)
				}
				got := vals[0].F32()
				for i := 0; i < c.batch*c.m; i++ {
					for j := 0; j < c.n; j++ {
						var s, sa float64
						for p := 0; p < c.k; p++ {
							v := float64(x[i*c.k+p]) * float64(w[j*c.k+p])
							s += v
							sa += math.Abs(v)
						}
						if d := math.Abs(float64(got[i*c.n+j]) - s); d > float64(c.k+2)*0x1p-23*sa {
							t.Fatalf("%+v const=%v run %d: y[%d,%d] = %v, want %v", c, constW, run, i, j, got[i*c.n+j], s)
						}
					}
				}
			}
		}
	}
}

// TestMatMulBF16Option runs x·Wᵀ with MatMulOpts.BF16, batched and plain,
// twice each (the bfloat16 weight packed once, then reused): with a
// constant W on a CPU with a bfloat16 unit it must equal float64 on the
// operands rounded to bfloat16 (within float32 summation); with a run-time
// W, or on a CPU without one, the float32 product.
func TestMatMulBF16Option(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	eng := graph.NewEngine(cpu.New())
	unit := gemm.BF16ConvPath() != ""
	round := func(v float32) float64 {
		b := math.Float32bits(v)
		return float64(math.Float32frombits((b + 0x7FFF + (b>>16)&1) &^ 0xFFFF))
	}
	for _, c := range []struct{ batch, m, n, k int }{{1, 55, 384, 384}, {3, 7, 33, 901}, {1, 1, 70, 50}, {2, 30, 5, 3}} {
		w := randF32(r, c.n*c.k)
		for run := 0; run < 2; run++ {
			x := randF32(r, c.batch*c.m*c.k)
			for _, constW := range []bool{true, false} {
				g := graph.New()
				xt := g.InputF32("x", graph.Shape{c.batch, c.m, c.k}, x)
				wt := g.InputF32("w", graph.Shape{c.n, c.k}, w)
				if constW {
					wt = g.Param("w", graph.F32, graph.Shape{c.n, c.k}, bytesOf(w))
				}
				vals, err := eng.Eval(context.Background(), xt.MatMulWith(wt.T(), graph.MatMulOpts{BF16: true}))
				if err != nil {
					t.Fatal(err)
				}
				got := vals[0].F32()
				bf := unit && constW
				for i := 0; i < c.batch*c.m; i++ {
					for j := 0; j < c.n; j++ {
						var s, sa float64
						for p := 0; p < c.k; p++ {
							v := float64(x[i*c.k+p]) * float64(w[j*c.k+p])
							if bf {
								v = round(x[i*c.k+p]) * round(w[j*c.k+p])
							}
							s += v
							sa += math.Abs(v)
						}
						if d := math.Abs(float64(got[i*c.n+j]) - s); d > float64(c.k+2)*0x1p-23*sa {
							t.Fatalf("%+v const=%v bfloat16=%v run %d: y[%d,%d] = %v, want %v", c, constW, bf, run, i, j, got[i*c.n+j], s)
						}
					}
				}
			}
		}
	}
}

// TestConv1dBF16Option runs a convolution with ConvOpts.BF16 and a
// constant weight: on a machine with AMX-BF16 it must equal float64 on
// the operands rounded to bfloat16 (within float32 summation), elsewhere
// the float32 result.
func TestConv1dBF16Option(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const cin, cout, l, k, dil = 128, 128, 500, 7, 3
	w, bias := randF32(r, cout*cin*k), randF32(r, cout)
	x := randF32(r, cin*l)
	amx := gemm.HasBF16Conv()
	ref := func(v []float32) []float32 {
		if !amx {
			return v
		}
		out := make([]float32, len(v))
		for i, f := range v {
			b := math.Float32bits(f)
			out[i] = math.Float32frombits((b + 0x7FFF + (b>>16)&1) &^ 0xFFFF)
		}
		return out
	}
	want, mag, _ := convRef(ref(x), ref(w), bias, 1, cin, l, cout, k, 1, 9, 9, dil, 1)
	eng := graph.NewEngine(cpu.New())
	g := graph.New()
	y := g.InputF32("x", graph.Shape{1, cin, l}, x).Conv1d(
		g.Param("w", graph.F32, graph.Shape{cout, cin, k}, bytesOf(w)),
		g.Param("b", graph.F32, graph.Shape{cout}, bytesOf(bias)),
		graph.ConvOpts{Padding: 9, Dilation: dil, BF16: true})
	vals, err := eng.Eval(context.Background(), y)
	if err != nil {
		t.Fatal(err)
	}
	got := vals[0].F32()
	eps := float64(cin*k+2) * 0x1p-23
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= eps*mag[i]+1e-30) {
			t.Fatalf("AMX %v: y[%d] = %v, want %v (|diff| %.3g > %.3g)", amx, i, got[i], want[i], d, eps*mag[i])
		}
	}
}

// convTRef is conv_transpose1d in float64 (w [Cin, Cout/groups, K]) with
// the bound Σ|w·x| + |b| per output.
func convTRef(x, w, b []float32, N, Cin, L, Cout, K, stride, pad, outPad, dil, groups int) (want, mag []float64, Lout int) {
	Lout = (L-1)*stride - 2*pad + dil*(K-1) + outPad + 1
	cig, cog := Cin/groups, Cout/groups
	want, mag = make([]float64, N*Cout*Lout), make([]float64, N*Cout*Lout)
	for n := 0; n < N; n++ {
		for co := 0; co < Cout; co++ {
			for t := 0; t < Lout; t++ {
				if b != nil {
					want[(n*Cout+co)*Lout+t] = float64(b[co])
					mag[(n*Cout+co)*Lout+t] = math.Abs(float64(b[co]))
				}
			}
		}
		for ci := 0; ci < Cin; ci++ {
			g := ci / cig
			for i := 0; i < L; i++ {
				for c := 0; c < cog; c++ {
					co := g*cog + c
					for k := 0; k < K; k++ {
						if t := i*stride + k*dil - pad; t >= 0 && t < Lout {
							p := float64(x[(n*Cin+ci)*L+i]) * float64(w[(ci*cog+c)*K+k])
							want[(n*Cout+co)*Lout+t] += p
							mag[(n*Cout+co)*Lout+t] += math.Abs(p)
						}
					}
				}
			}
		}
	}
	return want, mag, Lout
}

// TestConvTranspose1dPaths runs transposed convolutions (the polyphase
// path: constant weights packed once per phase, run-time ones per call)
// against float64.
func TestConvTranspose1dPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		n, cin, cout, l, k, stride, pad, outPad, dil, groups int
	}{
		{1, 64, 32, 30, 20, 10, 5, 0, 1, 1}, // Kokoro ups.0
		{1, 32, 16, 50, 12, 6, 3, 0, 1, 1},  // Kokoro ups.1
		{2, 6, 4, 9, 3, 5, 1, 2, 1, 2},      // K < stride: empty phases, groups, batch
		{1, 8, 8, 11, 4, 1, 1, 0, 1, 1},     // stride 1
		{1, 5, 7, 13, 7, 3, 4, 1, 1, 1},     // output padding
		{1, 4, 6, 10, 3, 2, 1, 0, 2, 1},     // dilation: the col2im path
	}
	eng := graph.NewEngine(cpu.New())
	for _, c := range cases {
		for _, constW := range []bool{true, false} {
			w := randF32(r, c.cin*c.cout/c.groups*c.k)
			bias := randF32(r, c.cout)
			for run := 0; run < 2; run++ {
				x := randF32(r, c.n*c.cin*c.l)
				g := graph.New()
				ws := graph.Shape{c.cin, c.cout / c.groups, c.k}
				var wt graph.Tensor
				if constW {
					wt = g.Param("w", graph.F32, ws, bytesOf(w))
				} else {
					wt = g.InputF32("w", ws, w)
				}
				y := g.InputF32("x", graph.Shape{c.n, c.cin, c.l}, x).ConvTranspose1d(wt, g.Param("b", graph.F32, graph.Shape{c.cout}, bytesOf(bias)),
					graph.ConvOpts{Stride: c.stride, Padding: c.pad, OutputPadding: c.outPad, Dilation: c.dil, Groups: c.groups})
				vals, err := eng.Eval(context.Background(), y)
				if err != nil {
					t.Fatalf("%+v: %v", c, err)
				}
				got := vals[0].F32()
				want, mag, _ := convTRef(x, w, bias, c.n, c.cin, c.l, c.cout, c.k, c.stride, c.pad, c.outPad, c.dil, c.groups)
				if len(got) != len(want) {
					t.Fatalf("%+v: %d outputs, want %d", c, len(got), len(want))
				}
				eps := float64(c.cin*c.k+2) * 0x1p-23
				for i := range want {
					if d := math.Abs(float64(got[i]) - want[i]); !(d <= eps*mag[i]+1e-30) {
						t.Fatalf("%+v const=%v run %d: y[%d] = %v, want %v", c, constW, run, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestConvTranspose1dBF16Option: with BF16 and a constant weight, the
// polyphase path runs on AMX where there is one; the result must match
// float64 on bfloat16-rounded operands there, float32 elsewhere.
func TestConvTranspose1dBF16Option(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const cin, cout, l, k, stride, pad = 64, 32, 40, 20, 10, 5
	w, bias, x := randF32(r, cin*cout*k), randF32(r, cout), randF32(r, cin*l)
	round := func(v []float32) []float32 {
		if !gemm.HasBF16Conv() {
			return v
		}
		out := make([]float32, len(v))
		for i, f := range v {
			b := math.Float32bits(f)
			out[i] = math.Float32frombits((b + 0x7FFF + (b>>16)&1) &^ 0xFFFF)
		}
		return out
	}
	want, mag, _ := convTRef(round(x), round(w), bias, 1, cin, l, cout, k, stride, pad, 0, 1, 1)
	g := graph.New()
	y := g.InputF32("x", graph.Shape{1, cin, l}, x).ConvTranspose1d(g.Param("w", graph.F32, graph.Shape{cin, cout, k}, bytesOf(w)),
		g.Param("b", graph.F32, graph.Shape{cout}, bytesOf(bias)), graph.ConvOpts{Stride: stride, Padding: pad, BF16: true})
	vals, err := graph.NewEngine(cpu.New()).Eval(context.Background(), y)
	if err != nil {
		t.Fatal(err)
	}
	got := vals[0].F32()
	eps := float64(cin*k+2) * 0x1p-23
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= eps*mag[i]+1e-30) {
			t.Fatalf("y[%d] = %v, want %v (|diff| %.3g)", i, got[i], want[i], d)
		}
	}
}

// TestLSTMConstantWeights runs a bidirectional LSTM with constant weights
// (the input projection packed once per backend) and with the same weights
// as run-time inputs: the results must be identical.
func TestLSTMConstantWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const T, I, H = 13, 40, 24
	x := randF32(r, T*I)
	ws := [2][4][]float32{}
	for d := range ws {
		ws[d] = [4][]float32{randF32(r, 4*H*I), randF32(r, 4*H*H), randF32(r, 4*H), randF32(r, 4*H)}
	}
	eng := graph.NewEngine(cpu.New())
	run := func(constW bool) []float32 {
		g := graph.New()
		w := func(name string, v []float32, shape graph.Shape) graph.Tensor {
			if constW {
				return g.Param(name, graph.F32, shape, bytesOf(v))
			}
			return g.InputF32(name, shape, v)
		}
		dir := func(d int) graph.LSTMWeights {
			return graph.LSTMWeights{WIH: w(fmt.Sprint("wih", d), ws[d][0], graph.Shape{4 * H, I}), WHH: w(fmt.Sprint("whh", d), ws[d][1], graph.Shape{4 * H, H}),
				BIH: w(fmt.Sprint("bih", d), ws[d][2], graph.Shape{4 * H}), BHH: w(fmt.Sprint("bhh", d), ws[d][3], graph.Shape{4 * H})}
		}
		bw := dir(1)
		y, _, _ := g.InputF32("x", graph.Shape{1, T, I}, x).LSTM(dir(0), &bw, graph.Tensor{}, graph.Tensor{}, true)
		vals, err := eng.Eval(context.Background(), y)
		if err != nil {
			t.Fatal(err)
		}
		return vals[0].F32()
	}
	want := run(false)
	for rep := 0; rep < 2; rep++ {
		got := run(true)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("run %d: y[%d] = %v with constant weights, %v with inputs", rep, i, got[i], want[i])
			}
		}
	}
}
