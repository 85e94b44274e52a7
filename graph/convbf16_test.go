package graph_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestConvBF16OptionIsPartOfTheProgram checks that ConvOpts.BF16 and
// ConvOpts.Winograd reach the kernel attributes: the same convolution
// with neither, either or both must compile to four programs, never share
// one from the cache.
func TestConvBF16OptionIsPartOfTheProgram(t *testing.T) {
	eng := graph.NewEngine(cpu.New())
	x := make([]float32, 4*10)
	w := make([]float32, 3*4*3)
	for _, o := range []graph.ConvOpts{{}, {BF16: true}, {Winograd: true}, {BF16: true, Winograd: true}, {}, {Winograd: true}} {
		o.Padding = 1
		g := graph.New()
		y := g.InputF32("x", graph.Shape{1, 4, 10}, x).Conv1d(g.InputF32("w", graph.Shape{3, 4, 3}, w), graph.Tensor{}, o)
		if _, err := eng.Eval(context.Background(), y); err != nil {
			t.Fatal(err)
		}
	}
	if n := eng.Compiles(); n != 4 {
		t.Errorf("%d programs compiled for a convolution with and without BF16 and Winograd, want 4", n)
	}
}

// TestMatMulBF16OptionIsPartOfTheProgram: MatMulOpts.BF16 reaches the
// kernel attributes (a product with and without it compiles to two
// programs), and the zero options leave a product as MatMul makes it (one
// program for MatMul and MatMulWith(…, MatMulOpts{}), Linear and
// LinearWith alike).
func TestMatMulBF16OptionIsPartOfTheProgram(t *testing.T) {
	eng := graph.NewEngine(cpu.New())
	x := make([]float32, 5*4)
	w := make([]float32, 3*4)
	for _, c := range []struct {
		name     string
		product  func(x, w graph.Tensor) graph.Tensor
		programs int64 // compiled after this one
	}{
		{"MatMul", func(x, w graph.Tensor) graph.Tensor { return x.MatMul(w.T()) }, 1},
		{"MatMulWith zero", func(x, w graph.Tensor) graph.Tensor { return x.MatMulWith(w.T(), graph.MatMulOpts{}) }, 1},
		{"MatMulWith BF16", func(x, w graph.Tensor) graph.Tensor { return x.MatMulWith(w.T(), graph.MatMulOpts{BF16: true}) }, 2},
		{"Linear", func(x, w graph.Tensor) graph.Tensor { return x.Linear(w, graph.Tensor{}) }, 2},
		{"LinearWith BF16", func(x, w graph.Tensor) graph.Tensor {
			return x.LinearWith(w, graph.Tensor{}, graph.MatMulOpts{BF16: true})
		}, 2},
	} {
		g := graph.New()
		y := c.product(g.InputF32("x", graph.Shape{5, 4}, x), g.InputF32("w", graph.Shape{3, 4}, w))
		if _, err := eng.Eval(context.Background(), y); err != nil {
			t.Fatal(err)
		}
		if n := eng.Compiles(); n != c.programs {
			t.Errorf("after %s: %d programs compiled, want %d", c.name, n, c.programs)
		}
	}
}
