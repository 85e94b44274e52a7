package graph_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestFoldLeavesNoBuffers checks that folding a weight-only subgraph, which
// runs once in an engine's life, leaves neither its buffers in the pool
// nor its needs in the pool's bound: only the program that reads the
// folded weight does. The weight here (1 MiB) is 16 times the input.
func TestFoldLeavesNoBuffers(t *testing.T) {
	const rows, cols = 512, 512
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = 1
	}
	tests := []struct {
		name string
		fold func(g *graph.Graph) graph.Tensor // the weight, [rows, cols]
	}{
		{"scaled", func(g *graph.Graph) graph.Tensor { return g.ParamF32("w", graph.Shape{rows, cols}, w).MulScalar(0.5) }},
		{"shifted and scaled", func(g *graph.Graph) graph.Tensor {
			return g.ParamF32("w", graph.Shape{rows, cols}, w).AddScalar(1).MulScalar(0.5)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := graph.NewEngine(cpu.New())
			g := graph.New()
			y := g.InputF32("x", graph.Shape{1, cols}, x).MatMul(tt.fold(g).T())
			if _, err := eng.Eval(context.Background(), y); err != nil {
				t.Fatal(err)
			}
			st := eng.Stats()
			if limit := int64(64 << 10); st.PeakNeedBytes > limit || st.IdleBytes > limit {
				t.Errorf("after folding a %d-byte weight: peak need %d, idle %d bytes; want at most %d each (the reading program's)", 4*rows*cols, st.PeakNeedBytes, st.IdleBytes, limit)
			}
		})
	}
}
