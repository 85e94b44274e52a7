package graph_test

import (
	"context"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// allocCounter counts the buffers a backend allocates.
type allocCounter struct {
	*cpu.Backend
	allocs int
}

func (a *allocCounter) Alloc(n int) (kernels.Buffer, error) {
	a.allocs++
	return a.Backend.Alloc(n)
}

// TestNewShapeReusesLargerBuffers checks that a program for a new, smaller
// shape (within a factor of two) runs in the buffers a closed program left,
// instead of allocating fresh ones, and computes the right values there.
func TestNewShapeReusesLargerBuffers(t *testing.T) {
	be := &allocCounter{Backend: cpu.New()}
	eng := graph.NewEngine(be)
	run := func(n int) []float32 {
		t.Helper()
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i)
		}
		g := graph.New()
		y := g.InputF32("x", graph.Shape{n}, x).Exp().Neg().Add(g.InputF32("x2", graph.Shape{n}, x))
		vals, err := eng.Eval(context.Background(), y.MulScalar(2))
		if err != nil {
			t.Fatal(err)
		}
		return vals[0].F32()
	}
	run(1000)
	first := be.allocs
	got := run(900)
	if be.allocs != first {
		t.Errorf("a program for 900 elements allocated %d new buffers after one for 1000 was closed, want 0", be.allocs-first)
	}
	if len(got) != 900 || got[3] != 2*(3-float32(20.085537)) {
		t.Errorf("results in reused buffers: len %d, y[3] = %v", len(got), got[3])
	}
	run(3000) // more than twice as large: new buffers
	if be.allocs == first {
		t.Error("a program for 3000 elements reused buffers sized for 1000")
	}
}
