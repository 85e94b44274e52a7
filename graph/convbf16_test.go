package graph_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestConvBF16OptionIsPartOfTheProgram checks that ConvOpts.BF16 reaches
// the kernel attributes: the same convolution with and without it must
// compile to two programs, never share one from the cache.
func TestConvBF16OptionIsPartOfTheProgram(t *testing.T) {
	eng := graph.NewEngine(cpu.New())
	x := make([]float32, 4*10)
	w := make([]float32, 3*4*3)
	for _, bf := range []bool{false, true, false} {
		g := graph.New()
		y := g.InputF32("x", graph.Shape{1, 4, 10}, x).Conv1d(g.InputF32("w", graph.Shape{3, 4, 3}, w), graph.Tensor{}, graph.ConvOpts{Padding: 1, BF16: bf})
		if _, err := eng.Eval(context.Background(), y); err != nil {
			t.Fatal(err)
		}
	}
	if n := eng.Compiles(); n != 2 {
		t.Errorf("%d programs compiled for a convolution with and without BF16, want 2", n)
	}
}
