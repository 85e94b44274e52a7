package graph_test

// What the graph's tests share: an engine and graph per test, and a
// comparison with the float64 references of package kerneltest.

import (
	"context"
	"math"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// harness bundles an engine and a graph for one test.
type harness struct {
	t   *testing.T
	eng *graph.Engine
	g   *graph.Graph
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, eng: graph.NewEngine(cpu.New()), g: graph.New()}
}

func (h *harness) in(a kerneltest.ND) graph.Tensor {
	return h.g.InputF32("x", graph.Shape(a.Shape), a.F32())
}

func (h *harness) eval(outs ...graph.Tensor) []*graph.Value {
	h.t.Helper()
	vals, err := h.eng.Eval(context.Background(), outs...)
	if err != nil {
		h.t.Fatalf("eval: %v", err)
	}
	return vals
}

// closeTo compares a result with the reference by max abs error relative
// to the reference's scale (and exact NaN positions).
func closeTo(t *testing.T, name string, got *graph.Value, want kerneltest.ND, tol float64) {
	t.Helper()
	if !got.Shape.Equal(graph.Shape(want.Shape)) {
		t.Fatalf("%s: shape %v, want %v", name, got.Shape, want.Shape)
	}
	g := got.Float64s()
	scale := 1.0
	for _, v := range want.Data {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			scale = max(scale, math.Abs(v))
		}
	}
	for i, w := range want.Data {
		v := g[i]
		switch {
		case math.IsNaN(w) || math.IsNaN(v):
			if math.IsNaN(w) != math.IsNaN(v) {
				t.Fatalf("%s[%d]: got %v, want %v", name, i, v, w)
			}
		case math.IsInf(w, 0):
			if v != w {
				t.Fatalf("%s[%d]: got %v, want %v", name, i, v, w)
			}
		case math.Abs(v-w) > tol*scale:
			t.Fatalf("%s[%d] (of %v): got %v, want %v (tolerance %g·%g)", name, i, want.Shape, v, w, tol, scale)
		}
	}
}
