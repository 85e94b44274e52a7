package graph_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/signalcmp"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
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

// TestFullPrecisionOverridesBF16: in a full-precision graph, a
// convolution or product whose options allow bfloat16 computes in
// float32 (bit for bit the result without the option); elsewhere, on a
// CPU with a bfloat16 unit, the option rounds.
func TestFullPrecisionOverridesBF16(t *testing.T) {
	ctx := context.Background()
	eng := graph.NewEngine(cpu.New())
	x, w, m := make([]float32, 64*40), make([]float32, 64*64*3), make([]float32, 64*64)
	for i := range x {
		x[i] = float32(i%17)*0.1 + 0.0123
	}
	for i := range w {
		w[i] = float32(i%13)*0.01 - 0.0571
	}
	copy(m, w)
	run := func(bf16, full bool) []float32 {
		g := graph.New()
		if full {
			g.FullPrecision()
		}
		in := g.InputF32("x", graph.Shape{1, 64, 40}, x)
		y := in.Conv1d(g.ParamF32("w", graph.Shape{64, 64, 3}, w), graph.Tensor{}, graph.ConvOpts{Padding: 1, BF16: bf16})
		y = y.Reshape(64, 40).T().MatMulWith(g.ParamF32("m", graph.Shape{64, 64}, m), graph.MatMulOpts{BF16: bf16})
		v, err := eng.Eval(ctx, y)
		if err != nil {
			t.Fatal(err)
		}
		return v[0].F32()
	}
	exact := run(false, false)
	if got := run(true, true); !slices.Equal(got, exact) {
		t.Errorf("a full-precision graph's bfloat16-allowed steps differ from float32 (max abs %.3g)", signalcmp.MaxAbs(got, exact))
	}
	if gemm.HasBF16Conv() && slices.Equal(run(true, false), exact) {
		t.Errorf("with a bfloat16 unit (%s), the bfloat16-allowed steps gave float32's result: the test shows nothing", gemm.BF16ConvPath())
	}
}
