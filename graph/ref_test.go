package graph_test

// A tiny float64 reference: dense row-major arrays and the textbook
// definition of every op, written for clarity, not speed.

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

type nd struct {
	shape []int
	data  []float64
}

func newND(shape ...int) nd {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return nd{shape: append([]int(nil), shape...), data: make([]float64, n)}
}

func randND(rng *rand.Rand, lo, hi float64, shape ...int) nd {
	a := newND(shape...)
	for i := range a.data {
		a.data[i] = lo + (hi-lo)*rng.Float64()
	}
	return a
}

func (a nd) strides() []int {
	st := make([]int, len(a.shape))
	acc := 1
	for i := len(a.shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= a.shape[i]
	}
	return st
}

// unravel turns a flat index into coordinates.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// at reads a with NumPy broadcasting from coordinates of a larger shape.
func (a nd) at(idx []int) float64 {
	off := len(idx) - len(a.shape)
	st := a.strides()
	p := 0
	for d := range a.shape {
		if a.shape[d] != 1 {
			p += idx[off+d] * st[d]
		}
	}
	return a.data[p]
}

func (a nd) f32() []float32 {
	out := make([]float32, len(a.data))
	for i, v := range a.data {
		out[i] = float32(v)
	}
	return out
}

// round32 rounds the reference data to float32, as the graph sees it.
func (a nd) round32() nd {
	for i, v := range a.data {
		a.data[i] = float64(float32(v))
	}
	return a
}

func refBroadcast(shapes ...[]int) []int {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			j := r - len(s) + i
			if d != 1 {
				out[j] = d
			}
		}
	}
	return out
}

func refMap(f func(xs ...float64) float64, ins ...nd) nd {
	shapes := make([][]int, len(ins))
	for i, a := range ins {
		shapes[i] = a.shape
	}
	out := newND(refBroadcast(shapes...)...)
	xs := make([]float64, len(ins))
	for i := range out.data {
		idx := unravel(i, out.shape)
		for k, a := range ins {
			xs[k] = a.at(idx)
		}
		out.data[i] = f(xs...)
	}
	return out
}

// harness bundles an engine and a graph for one test.
type harness struct {
	t   *testing.T
	eng *graph.Engine
	g   *graph.Graph
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, eng: graph.NewEngine(cpu.New()), g: graph.New()}
}

func (h *harness) in(a nd) graph.Tensor {
	return h.g.InputF32("x", graph.Shape(a.shape), a.f32())
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
func closeTo(t *testing.T, name string, got *graph.Value, want nd, tol float64) {
	t.Helper()
	if !got.Shape.Equal(graph.Shape(want.shape)) {
		t.Fatalf("%s: shape %v, want %v", name, got.Shape, want.shape)
	}
	g := got.Float64s()
	scale := 1.0
	for _, v := range want.data {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			scale = max(scale, math.Abs(v))
		}
	}
	for i, w := range want.data {
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
			t.Fatalf("%s[%d] (of %v): got %v, want %v (tolerance %g·%g)", name, i, want.shape, v, w, tol, scale)
		}
	}
}
