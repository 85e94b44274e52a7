package graph_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestKernelInputsLiveUntilKernel is a regression test: when a kernel needs
// dense copies of several inputs (here the LSTM's broadcast zero states),
// the copies made first must stay live until the kernel runs. They used to
// die one step early, so the planner could give their memory to the
// kernel's outputs and the states read back whatever a previous run had
// left in the pooled arena.
func TestKernelInputsLiveUntilKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const T, I, H = 12, 40, 16
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64()) * 0.3
		}
		return v
	}
	x := rnd(T * I)
	ws := [][]float32{rnd(4 * H * I), rnd(4 * H * H), rnd(4 * H), rnd(4 * H), rnd(4 * H * I), rnd(4 * H * H), rnd(4 * H), rnd(4 * H)}
	eng := graph.NewEngine(cpu.New())
	run := func(explicitZeros bool) []float32 {
		g := graph.New()
		xt := g.InputF32("x", graph.Shape{1, T, I}, x).MulScalar(2) // an arena value, not an input
		p := func(k int, s graph.Shape) graph.Tensor { return g.ParamF32("w", s, ws[k]) }
		fw := graph.LSTMWeights{WIH: p(0, graph.Shape{4 * H, I}), WHH: p(1, graph.Shape{4 * H, H}), BIH: p(2, graph.Shape{4 * H}), BHH: p(3, graph.Shape{4 * H})}
		bw := graph.LSTMWeights{WIH: p(4, graph.Shape{4 * H, I}), WHH: p(5, graph.Shape{4 * H, H}), BIH: p(6, graph.Shape{4 * H}), BHH: p(7, graph.Shape{4 * H})}
		var h0 graph.Tensor
		if explicitZeros {
			h0 = g.ConstF32(graph.Shape{2, 1, H}, make([]float32, 2*H))
		}
		y, _, _ := xt.LSTM(fw, &bw, h0, h0, true)
		vals, err := eng.Eval(context.Background(), y.MulScalar(3))
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), vals[0].F32()...)
	}
	want := run(true)
	for it := range 4 {
		got := run(false)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("run %d: y[%d] = %v with default zero states, %v with explicit zeros", it, i, got[i], want[i])
			}
		}
	}
}
