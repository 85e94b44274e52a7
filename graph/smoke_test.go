package graph_test

import (
	"context"
	"math"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	a := g.InputF32("a", graph.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	w := g.ConstF32(graph.Shape{4, 3}, []float32{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1})
	y := a.Linear(w, graph.Tensor{}).MulScalar(2).AddScalar(1)
	s := y.Softmax(-1)
	m := a.T().Mean(false, 0)
	vals, err := e.Eval(ctx, y, s, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(vals[0].Shape, vals[0].F32())
	t.Log(vals[1].F32())
	t.Log(vals[2].Shape, vals[2].F32())
	want := []float32{3, 5, 7, 13, 9, 11, 13, 31}
	for i, v := range vals[0].F32() {
		if math.Abs(float64(v-want[i])) > 1e-5 {
			t.Fatalf("y[%d]=%v want %v", i, v, want[i])
		}
	}
}
