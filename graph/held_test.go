package graph_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestHeld hands a program's output to the next graph in backend memory:
// on the CPU, on a device double with every op (no host access: a Value
// would be a read and a write), and on one with only fused expressions
// (the host steps read the held input through their mirrors). The values
// are Eval's; on the doubles, the held value never crosses to the host.
func TestHeld(t *testing.T) {
	ctx := context.Background()
	x := []float32{1, -2, 3, -4, 5, -6}
	for _, c := range []struct {
		name string
		dev  *kerneltest.Partial // nil: the CPU backend
	}{
		{"cpu", nil},
		{"device", kerneltest.NewPartial(kerneltest.AllOps()...)},
		{"partitioned", kerneltest.NewPartial()},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := graph.NewEngine(cpu.New())
			if c.dev != nil {
				eng = graph.NewEngine(c.dev, graph.WithHost(cpu.New()))
			}
			first := func(g *graph.Graph) graph.Tensor {
				return g.InputF32("x", graph.Shape{2, 3}, x).MulScalar(2).AddScalar(1)
			}
			second := func(g *graph.Graph, y graph.Tensor) graph.Tensor {
				return y.Softmax(-1).Add(g.InputF32("z", graph.Shape{2, 3}, []float32{1, 1, 1, 2, 2, 2}))
			}
			g := graph.New()
			want, err := eng.Eval(ctx, second(g, first(g)))
			if err != nil {
				t.Fatal(err)
			}
			before := counts(c.dev)
			g1 := graph.New()
			held, err := eng.EvalHeld(ctx, first(g1))
			if err != nil {
				t.Fatal(err)
			}
			y := held[0]
			defer y.Close()
			if !y.Shape().Equal(graph.Shape{2, 3}) || y.DType() != graph.F32 {
				t.Fatalf("held %s%v, want f32[2 3]", y.DType(), y.Shape())
			}
			if c.dev != nil {
				if got := counts(c.dev); got.Reads != before.Reads {
					t.Errorf("EvalHeld read %d times from the device", got.Reads-before.Reads)
				}
			}
			v, err := y.Value(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := v.F32(), []float32{3, -3, 7, -7, 11, -11}; !slices.Equal(got, want) {
				t.Errorf("Value %v, want %v", got, want)
			}
			// The second graph with y from the host, then (twice: inputs are
			// read-only) held: the same values, y's 24 bytes fewer written.
			viaHost := counts(c.dev)
			g2 := graph.New()
			if _, err := eng.Eval(ctx, second(g2, g2.InputF32("y", y.Shape(), v.F32()))); err != nil {
				t.Fatal(err)
			}
			hostBytes := counts(c.dev).WriteBytes - viaHost.WriteBytes
			for range 2 {
				mid := counts(c.dev)
				g2 := graph.New()
				got, err := eng.Eval(ctx, second(g2, g2.InputHeld("y", y)))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got[0].F32(), want[0].F32()) {
					t.Errorf("through a held value %v, in one graph %v", got[0].F32(), want[0].F32())
				}
				if c.dev != nil {
					if w := counts(c.dev).WriteBytes - mid.WriteBytes; w != hostBytes-24 {
						t.Errorf("the second graph wrote %d bytes to the device, %d with y from the host: want 24 fewer", w, hostBytes)
					}
				}
			}
		})
	}
}

// counts returns dev's counts (zero for the CPU).
func counts(dev *kerneltest.Partial) kerneltest.PartialCounts {
	if dev == nil {
		return kerneltest.PartialCounts{}
	}
	return dev.Counts()
}

// TestHeldMisuse: what a held value refuses, each with an error that says
// why, never a panic.
func TestHeldMisuse(t *testing.T) {
	ctx := context.Background()
	eng, other := graph.NewEngine(cpu.New()), graph.NewEngine(cpu.New())
	hold := func() *graph.Held {
		g := graph.New()
		h, err := eng.EvalHeld(ctx, g.InputF32("x", graph.Shape{2}, []float32{1, 2}).AddScalar(1))
		if err != nil {
			t.Fatal(err)
		}
		return h[0]
	}

	closed := hold()
	closed.Close()
	closed.Close() // harmless
	if _, err := closed.Value(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Value of a closed held value: %v", err)
	}
	if in := graph.New().InputHeld("y", closed); in.Err() == nil || !strings.Contains(in.Err().Error(), "closed") {
		t.Errorf("InputHeld of a closed held value: %v", in.Err())
	}

	h := hold()
	g := graph.New()
	in := g.InputHeld("y", h)
	h.Close()
	if _, err := eng.Eval(ctx, in.AddScalar(1)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a graph whose held input was closed since: %v", err)
	}

	h = hold()
	defer h.Close()
	if _, err := other.Eval(ctx, graph.New().InputHeld("y", h).AddScalar(1)); err == nil || !strings.Contains(err.Error(), "another engine") {
		t.Errorf("a held value on another engine: %v", err)
	}

	g = graph.New()
	in = g.InputHeld("y", h)
	prog, err := eng.Compile(ctx, in.AddScalar(1))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if err := prog.SetF32(ctx, in, []float32{5, 6}); err == nil || !strings.Contains(err.Error(), "held") {
		t.Errorf("Set on a held input: %v", err)
	}
	if err := prog.Run(ctx); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 2)
	if err := prog.ReadF32(ctx, 0, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, []float32{3, 4}) {
		t.Errorf("compiled program over a held input: %v, want [3 4]", out)
	}

	var nilHeld *graph.Held
	if in := graph.New().InputHeld("y", nilHeld); in.Err() == nil {
		t.Error("InputHeld(nil) accepted")
	}
}
