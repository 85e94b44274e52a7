package graph_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestStreamingStepAllocs runs a small model step of the kind a streaming
// detector makes per chunk — reflect pad, strided convolutions, an LSTM
// step on carried state, a mean — and requires the steady state to
// allocate nothing (conv1d's im2col, reductions, the LSTM and the BLAS call
// used to allocate on every launch).
func TestStreamingStepAllocs(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(cpu.New())
	st, err := e.NewState("h", graph.F32, graph.Shape{2, 1, 16})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := graph.New()
	w := func(name string, shape ...int) graph.Tensor {
		n := graph.Shape(shape).Len()
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(i%7-3) * 0.05
		}
		return g.ParamF32(name, shape, d)
	}
	x := g.Input("x", graph.F32, graph.Shape{1, 72})
	s := g.ReadState(st)
	h := x.Pad1d(kernels.PadReflect, 0, 8).Unsqueeze(1).Conv1d(w("basis", 10, 1, 32), graph.Tensor{}, graph.ConvOpts{Stride: 16})
	h = h.Conv1d(w("c1", 16, 10, 3), w("b1", 16), graph.ConvOpts{Stride: 2, Padding: 1}).Relu()
	feat := h.Mean(false, 2).Unsqueeze(0) // [1, 1, 16]
	_, hN, cN := feat.LSTM(graph.LSTMWeights{WIH: w("wih", 64, 16), WHH: w("whh", 64, 16), BIH: w("bih", 64), BHH: w("bhh", 64)},
		nil, s.Slice(0, 0, 1), s.Slice(0, 1, 2), false)
	y := hN.Squeeze(0).MatMul(w("out", 16, 1)).Sigmoid()
	prog, err := e.Compile(ctx, y, g.Assign(st, hN, 0, 0), g.Assign(st, cN, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	in := make([]float32, 72)
	for i := range in {
		in[i] = float32(i%11) * 0.1
	}
	out := make([]float32, 1)
	allocs := testing.AllocsPerRun(50, func() {
		_ = prog.SetF32(ctx, x, in)
		_ = prog.Run(ctx)
		_ = prog.ReadF32(ctx, 0, out)
	})
	if allocs > 0 {
		t.Errorf("a streaming step allocates %.1f times", allocs)
	}
}
