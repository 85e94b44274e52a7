package graph_test

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestUpdateState appends rows to a cache at a position given at run time
// and reads the whole cache back in the same program, as a decoder step
// does: one compiled program serves every position.
func TestUpdateState(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(cpu.New())
	st, err := e.NewState("cache", graph.F32, graph.Shape{2, 5, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := graph.New()
	x := g.Input("x", graph.F32, graph.Shape{2, 1, 3})
	pos := g.Input("pos", graph.I64, graph.Shape{1})
	full := g.UpdateState(st, x, 1, pos)
	sum := full.Sum(false, 1) // reads the cache after the write
	prog, err := e.Compile(ctx, sum)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	want := make([]float32, 2*5*3)
	for step := range 5 {
		row := []float32{float32(step), 10 + float32(step), 20, -1, -float32(step), 0.5}
		if err := prog.SetF32(ctx, x, row); err != nil {
			t.Fatal(err)
		}
		if err := prog.Set(ctx, pos, binary.LittleEndian.AppendUint64(nil, uint64(step))); err != nil {
			t.Fatal(err)
		}
		if err := prog.Run(ctx); err != nil {
			t.Fatal(err)
		}
		for b := range 2 {
			copy(want[(b*5+step)*3:], row[b*3:b*3+3])
		}
		got := make([]float32, 6)
		if err := prog.ReadF32(ctx, 0, got); err != nil {
			t.Fatal(err)
		}
		var sums []float32
		for b := range 2 {
			for c := range 3 {
				var s float32
				for p := range 5 {
					s += want[(b*5+p)*3+c]
				}
				sums = append(sums, s)
			}
		}
		if !slices.Equal(got, sums) {
			t.Fatalf("step %d: column sums %v, want %v", step, got, sums)
		}
	}
	if n := e.Compiles(); n != 1 {
		t.Errorf("%d programs compiled for five positions, want 1", n)
	}
	raw := make([]byte, 4*len(want))
	if err := st.Read(ctx, raw); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != w {
			t.Fatalf("cache[%d] = %g, want %g", i, got, w)
		}
	}

	// A position where the rows do not fit fails the run with a named error.
	if err := prog.Set(ctx, pos, binary.LittleEndian.AppendUint64(nil, 5)); err != nil {
		t.Fatal(err)
	}
	if err := prog.Run(ctx); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("run at position 5 of 5: %v, want a does-not-fit error", err)
	}
}

// TestUpdateStateConflicts: a graph that updates a state in place and
// also reads or assigns it has no defined order and must not compile.
func TestUpdateStateConflicts(t *testing.T) {
	e := graph.NewEngine(cpu.New())
	st, err := e.NewState("cache", graph.F32, graph.Shape{4, 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		name  string
		build func(g *graph.Graph, upd graph.Tensor) []graph.Tensor
	}{
		{"read", func(g *graph.Graph, upd graph.Tensor) []graph.Tensor {
			return []graph.Tensor{upd.Add(g.ReadState(st))}
		}},
		{"assign", func(g *graph.Graph, upd graph.Tensor) []graph.Tensor {
			return []graph.Tensor{upd, g.Assign(st, g.Full(0, graph.F32, graph.Shape{1, 2}), 0, 0)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New()
			upd := g.UpdateState(st, g.Full(1, graph.F32, graph.Shape{1, 2}), 0, g.ConstI64(graph.Shape{1}, []int64{2}))
			_, err := e.Compile(context.Background(), tc.build(g, upd)...)
			if err == nil || !strings.Contains(err.Error(), "updated in place") {
				t.Errorf("compile: %v, want an updated-in-place conflict", err)
			}
		})
	}
	g := graph.New()
	if err := g.UpdateState(st, g.Full(1, graph.F32, graph.Shape{1, 3}), 0, g.ConstI64(graph.Shape{1}, []int64{0})).Err(); err == nil {
		t.Error("a value of the wrong width was accepted")
	}
}
