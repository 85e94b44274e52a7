package graph_test

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

func TestErrorsNameOpAndShapes(t *testing.T) {
	g := graph.New()
	a := g.Input("a", graph.F32, graph.Shape{2, 3})
	b := g.Input("b", graph.F32, graph.Shape{4, 5})
	i := g.Input("i", graph.I64, graph.Shape{2, 3})
	w := g.Input("w", graph.F32, graph.Shape{8, 4, 3})
	cases := []struct {
		t    graph.Tensor
		want []string
	}{
		{a.Add(b), []string{"add", "[2 3]", "[4 5]", "broadcast"}},
		{a.MatMul(b), []string{"matmul", "[2 3]", "[4 5]"}},
		{a.Add(i), []string{"add", "dtypes differ", "f32", "i64"}},
		{a.Reshape(7), []string{"reshape", "[2 3]", "[7]"}},
		{a.Permute(0, 0), []string{"permute"}},
		{a.Sum(false, 5), []string{"sum", "axis 5"}},
		{a.Unsqueeze(0).Conv1d(w, graph.Tensor{}, graph.ConvOpts{}), []string{"conv1d", "[8 4 3]", "[1 2 3]"}},
		{a.Exp().Add(b).Log(), []string{"add"}}, // the first error travels on
		{i.Exp(), []string{"exp", "floating-point", "i64"}},
		{a.Squeeze(0), []string{"squeeze", "extent 2"}},
		{a.Pad1d(kernels.PadReflect, 3, 0), []string{"pad", "reflect"}},
		{a.Slice(0, 0, 1).SliceStep(1, 0, 3, 0), []string{"slice", "step 0"}},
		{graph.Concat(0, a, b), []string{"concat", "axis 1"}},
	}
	for _, c := range cases {
		err := c.t.Err()
		if err == nil {
			t.Errorf("expected an error containing %q", c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
	// Eval refuses a tensor carrying an error, and the zero Tensor.
	e := graph.NewEngine(cpu.New())
	if _, err := e.Eval(context.Background(), a.Add(b)); err == nil {
		t.Error("Eval of an invalid op succeeded")
	}
	if _, err := e.Eval(context.Background(), graph.Tensor{}); err == nil {
		t.Error("Eval of the zero Tensor succeeded")
	}
	if _, err := e.Eval(context.Background(), a.Exp()); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("Eval with an unbound input: %v", err)
	}
	var zero graph.Tensor
	if zero.Add(a).Err() != nil || zero.Exp().Err() != nil {
		// ops on the zero Tensor return the zero Tensor, whose Err says so
	}
	if err := zero.Err(); err == nil {
		t.Error("zero Tensor has no error")
	}
}

func TestCSEAndDCE(t *testing.T) {
	g := graph.New()
	a := g.Input("a", graph.F32, graph.Shape{3})
	x1 := a.Exp().MulScalar(2)
	x2 := a.Exp().MulScalar(2)
	if x1.ID() != x2.ID() {
		t.Errorf("identical expressions got nodes %d and %d", x1.ID(), x2.ID())
	}
	n := g.Len()
	_ = a.Exp()
	if g.Len() != n {
		t.Errorf("repeating an op grew the arena from %d to %d", n, g.Len())
	}
	// An unrelated broken branch does not stop evaluating a healthy one.
	bad := a.Reshape(5)
	if bad.Err() == nil {
		t.Fatal("expected an error")
	}
	good := g.InputF32("b", graph.Shape{2}, []float32{1, 2}).MulScalar(3)
	e := graph.NewEngine(cpu.New())
	vals, err := e.Eval(context.Background(), good)
	if err != nil {
		t.Fatalf("DCE: %v", err)
	}
	if v := vals[0].F32(); v[0] != 3 || v[1] != 6 {
		t.Errorf("got %v", v)
	}
}

// build makes a small model graph over shared weights.
func build(g *graph.Graph, w []float32, x []float32) graph.Tensor {
	wt := g.ParamF32("w", graph.Shape{4, 4}, w)
	in := g.InputF32("x", graph.Shape{2, 4}, x)
	// The weight's transpose·2 + 1 depends on weights alone: folded.
	wf := wt.T().MulScalar(2).AddScalar(1)
	return in.MatMul(wf).Relu().Softmax(-1)
}

func TestProgramCacheAndFolding(t *testing.T) {
	ctx := context.Background()
	w := make([]float32, 16)
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	be := cpu.New()
	e := graph.NewEngine(be)
	var first []float32
	for round := 0; round < 3; round++ {
		x := []float32{1, 2, 3, 4, float32(round), -1, 0.5, 2}
		g := graph.New()
		vals, err := e.Eval(ctx, build(g, w, x))
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			first = append([]float32(nil), vals[0].F32()...)
		}
	}
	if c := e.Compiles(); c != 1 {
		t.Errorf("three builds of the same graph compiled %d programs, want 1", c)
	}
	// The folded weight is computed once: the program itself launches
	// only matmul, fused relu and softmax.
	g := graph.New()
	prog, err := e.Compile(ctx, build(g, w, make([]float32, 8)))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if prog.Steps() != 3 {
		t.Errorf("program has %d steps, want 3 (matmul, relu, softmax)", prog.Steps())
	}
	// A different input shape compiles anew.
	g2 := graph.New()
	wt := g2.ParamF32("w", graph.Shape{4, 4}, w)
	if _, err := e.Eval(ctx, g2.InputF32("x", graph.Shape{1, 4}, []float32{1, 2, 3, 4}).MatMul(wt)); err != nil {
		t.Fatal(err)
	}
	if c := e.Compiles(); c != 2 {
		t.Errorf("a new shape: %d compiles, want 2", c)
	}
	_ = first
}

func TestFusionMakesOneStep(t *testing.T) {
	g := graph.New()
	x := g.InputF32("x", graph.Shape{2, 3}, []float32{-1, 0, 1, 2, 3, 4})
	y := x.MulScalar(2).AddScalar(1).Gelu().Mul(x.Sigmoid()).Tanh()
	e := graph.NewEngine(cpu.New())
	prog, err := e.Compile(context.Background(), y)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if prog.Steps() != 1 {
		t.Errorf("an elementwise chain compiled to %d steps, want 1", prog.Steps())
	}
}

func TestStateAssign(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(cpu.New())
	st, err := e.NewState("acc", graph.F32, graph.Shape{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// acc ← acc + x, and row 1 of acc ← x·10, run three times with one
	// compiled program.
	g := graph.New()
	x := g.Input("x", graph.F32, graph.Shape{1, 3})
	old := g.ReadState(st)
	sum := old.Add(x)
	eff1 := g.Assign(st, sum, 0, 0)
	out := old.Sum(false)
	prog, err := e.Compile(ctx, out, eff1)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	var got [1]float32
	for i := 1; i <= 3; i++ {
		if err := prog.SetF32(ctx, x, []float32{1, 2, float32(i)}); err != nil {
			t.Fatal(err)
		}
		if err := prog.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if err := prog.ReadF32(ctx, 0, got[:]); err != nil {
			t.Fatal(err)
		}
		// The output reads the state before this run's assignment.
		want := float32(2 * (3*(i-1) + (i-1)*i/2))
		if got[0] != want {
			t.Errorf("run %d: sum of old state %v, want %v", i, got[0], want)
		}
	}
	raw := make([]byte, 24)
	if err := st.Read(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[8:])); v != 6 {
		t.Errorf("state[0,2] = %v, want 1+2+3", v)
	}
	// Windowed assignment and reset.
	g = graph.New()
	eff := g.Assign(st, g.ConstF32(graph.Shape{1, 3}, []float32{7, 8, 9}), 0, 1)
	if _, err := e.Eval(ctx, eff); err != nil {
		t.Fatal(err)
	}
	_ = st.Read(ctx, raw)
	if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[12:])); v != 7 {
		t.Errorf("windowed assign: state[1,0] = %v, want 7", v)
	}
	if err := st.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	_ = st.Read(ctx, raw)
	for _, b := range raw {
		if b != 0 {
			t.Fatal("Reset left data")
		}
	}
	if g.Assign(st, g.ConstF32(graph.Shape{1, 4}, make([]float32, 4)), 0, 0).Err() == nil {
		t.Error("assigning a [1 4] value into a [2 3] state succeeded")
	}
}

func TestCancelledRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := graph.New()
	x := g.InputF32("x", graph.Shape{2}, []float32{1, 2})
	e := graph.NewEngine(cpu.New())
	if _, err := e.Eval(ctx, x.Exp()); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled eval: %v", err)
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(cpu.New())
	g := graph.New()
	x := g.Input("x", graph.F32, graph.Shape{4, 64})
	w := g.ParamF32("w", graph.Shape{32, 64}, make([]float32, 32*64))
	y := x.Linear(w, graph.Tensor{}).Gelu().LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5).Softmax(-1)
	prog, err := e.Compile(ctx, y)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	in := make([]float32, 4*64)
	out := make([]float32, 4*32)
	allocs := testing.AllocsPerRun(50, func() {
		_ = prog.SetF32(ctx, x, in)
		_ = prog.Run(ctx)
		_ = prog.ReadF32(ctx, 0, out)
	})
	if allocs > 0 {
		t.Errorf("steady-state run allocates %.1f times", allocs)
	}
}

// Streams with their own state share one compiled program: the cache keys
// on which state slot a node uses, not on the State object.
func TestProgramsSharedAcrossStates(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(cpu.New())
	step := func(st *graph.State, v float32) float32 {
		g := graph.New()
		x := g.InputF32("x", graph.Shape{1}, []float32{v})
		sum := g.ReadState(st).Add(x)
		vals, err := e.Eval(ctx, sum, g.Assign(st, sum, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return vals[0].F32()[0]
	}
	a, _ := e.NewState("a", graph.F32, graph.Shape{1})
	b, _ := e.NewState("b", graph.F32, graph.Shape{1})
	for i := 0; i < 3; i++ {
		step(a, 1)
		step(b, 10)
	}
	if got := step(a, 0); got != 3 {
		t.Errorf("state a = %v, want 3", got)
	}
	if got := step(b, 0); got != 30 {
		t.Errorf("state b = %v, want 30", got)
	}
	if c := e.Compiles(); c != 1 {
		t.Errorf("%d programs compiled for two states, want 1", c)
	}
	// Two different states in one graph stay distinct.
	g := graph.New()
	s := g.ReadState(a).Add(g.ReadState(b))
	vals, err := e.Eval(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if vals[0].F32()[0] != 33 {
		t.Errorf("a + b = %v, want 33", vals[0].F32()[0])
	}
}
