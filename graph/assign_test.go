package graph_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
)

// TestAssignTiming checks where a program's stores into states run: into
// states the program does not read, as soon as each value is ready, so
// that values stored one after another share the arena (a model storing
// every layer's keys and values); into a state it also reads, after every
// read, which sees the state as it was before the program even where the
// store comes first in the graph.
func TestAssignTiming(t *testing.T) {
	const n = 1 << 14 // floats per stored value: 64 KiB
	ctx := context.Background()
	tests := []struct {
		name     string
		read     bool // states[1] gets states[0] as read, + x
		maxArena int  // bytes
		want     [4]float32
	}{
		// Four values of 64 KiB stored one after another: one at a time
		// in the arena, beside the running value they are made from (the
		// old rule held all four to the end: 5 values).
		{"unread states", false, 3 * 4 * n, [4]float32{2, 3, 4, 5}},
		// states[0] is stored first in the graph, read after: the read
		// sees its old value, 0.
		{"a state read too", true, 1 << 30, [4]float32{2, 1, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := graph.NewEngine(cpu.New())
			var states []*graph.State
			for range 4 {
				s, err := eng.NewState("s", graph.F32, graph.Shape{n})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				states = append(states, s)
			}
			ones := make([]float32, n)
			for i := range ones {
				ones[i] = 1
			}
			g := graph.New()
			x := g.Input("x", graph.F32, graph.Shape{n})
			var effects []graph.Tensor
			y := x
			for i, s := range states {
				y = y.AddScalar(1) // 2, 3, 4, 5: a new arena value each
				v := y.Mul(x).Exp().Log()
				if i == 1 && tt.read {
					v = g.ReadState(states[0]).Add(x)
				}
				effects = append(effects, g.Assign(s, v, 0, 0))
			}
			p, err := eng.Compile(ctx, effects...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := p.ArenaBytes(); got > tt.maxArena {
				t.Errorf("arena %d bytes, want at most %d", got, tt.maxArena)
			}
			if err := p.SetF32(ctx, x, ones); err != nil {
				t.Fatal(err)
			}
			if err := p.Run(ctx); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4*n)
			for i, s := range states {
				if err := s.Read(ctx, buf); err != nil {
					t.Fatal(err)
				}
				got := math.Float32frombits(binary.LittleEndian.Uint32(buf[4*(n-1):]))
				if math.Abs(float64(got-tt.want[i])) > 1e-5 {
					t.Errorf("state %d = %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}
