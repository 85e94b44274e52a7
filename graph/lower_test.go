package graph_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// limited is the CPU backend claiming only some ops, so the engine must
// lower or partition around the rest.
type limited struct {
	*cpu.Backend
	ops map[kernels.Op]bool
}

func (l limited) Supports(s *kernels.Step) bool { return l.ops[s.Op] }

// TestLoweredNorms: a backend with reductions and fused expressions but no
// softmax or norm kernels runs them as reduce + fused steps (no host
// steps), matching the CPU's fixed kernels.
func TestLoweredNorms(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	data := func(n int) []float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		return d
	}
	xs, ws, bs := data(2*6*10), data(6), data(6)
	wl, bl := data(10), data(10)
	build := func(g *graph.Graph) []graph.Tensor {
		x := g.InputF32("x", graph.Shape{2, 6, 10}, xs)
		w, b := g.ParamF32("w", graph.Shape{6}, ws), g.ParamF32("b", graph.Shape{6}, bs)
		return []graph.Tensor{
			x.Softmax(-1),
			x.Softmax(1),
			x.LogSoftmax(-1),
			x.LayerNorm(g.ParamF32("wl", graph.Shape{10}, wl), g.ParamF32("bl", graph.Shape{10}, bl), 1e-5),
			x.GroupNorm(3, w, b, 1e-5),
		}
	}
	eval := func(e *graph.Engine) ([][]float64, *graph.Program) {
		g := graph.New()
		outs := build(g)
		vals, err := e.Eval(ctx, outs...)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := e.Compile(ctx, outs...)
		if err != nil {
			t.Fatal(err)
		}
		res := make([][]float64, len(vals))
		for i, v := range vals {
			res[i] = v.Float64s()
		}
		return res, prog
	}
	want, _ := eval(graph.NewEngine(cpu.New()))
	host := cpu.New()
	lim := limited{cpu.New(), map[kernels.Op]bool{kernels.OpFused: true, kernels.OpReduce: true}}
	got, prog := eval(graph.NewEngine(lim, graph.WithHost(host)))
	defer prog.Close()
	if n := prog.HostSteps(); n != 0 {
		t.Errorf("%d steps ran on the host, want every normalisation lowered", n)
	}
	for i := range want {
		var maxAbs float64
		for j := range want[i] {
			maxAbs = max(maxAbs, math.Abs(got[i][j]-want[i][j]))
		}
		if maxAbs > 2e-5 || math.IsNaN(maxAbs) {
			t.Errorf("output %d: lowered form differs from the fixed kernel by up to %g", i, maxAbs)
		}
	}
}

// TestPartitionSharedMemory: on a backend whose memory the host addresses
// (unified memory), host steps run on the device's buffers in place: the
// results are the CPU's, bit for bit, and nothing is copied.
func TestPartitionSharedMemory(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float32, 4*8)
	ws := make([]float32, 8*8)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	for i := range ws {
		ws[i] = float32(rng.NormFloat64())
	}
	build := func(g *graph.Graph) graph.Tensor {
		x := g.InputF32("x", graph.Shape{4, 8}, xs)
		w := g.ParamF32("w", graph.Shape{8, 8}, ws)
		h := x.MatMul(w).Relu().Softmax(-1) // matmul and relu on the device, softmax on the host
		return h.MatMul(w).AddScalar(1)
	}
	want, err := graph.NewEngine(cpu.New()).Eval(ctx, build(graph.New()))
	if err != nil {
		t.Fatal(err)
	}
	lim := limited{cpu.New(), map[kernels.Op]bool{kernels.OpFused: true, kernels.OpMatMul: true}}
	e := graph.NewEngine(lim, graph.WithHost(cpu.New()))
	g := graph.New()
	out := build(g)
	for range 2 { // a second run reuses the program's mirrors
		got, err := e.Eval(ctx, out)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range want[0].F32() {
			if got[0].F32()[i] != v {
				t.Fatalf("element %d: %g on the partitioned engine, %g on the CPU", i, got[0].F32()[i], v)
			}
		}
	}
	prog, err := e.Compile(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	if prog.HostSteps() != 1 {
		t.Errorf("%d host steps, want 1 (the softmax)", prog.HostSteps())
	}
	if st := e.Stats(); st.Transfers != 0 {
		t.Errorf("%d transfers on shared memory, want none", st.Transfers)
	}
}

// planning is the CPU backend with a kernels.Planner that records what the
// engine hands it and replays steps through the queue.
type planning struct {
	*cpu.Backend
	plans, runs int
}

type replay struct {
	p     *planning
	steps []kernels.Step
}

func (p *planning) Plan(steps []kernels.Step) (kernels.Plan, error) {
	p.plans++
	return replay{p, steps}, nil
}

func (r replay) Run(ctx context.Context, q kernels.Queue, bufs []kernels.Buffer) error {
	r.p.runs++
	for i := range r.steps {
		if err := q.Launch(ctx, &r.steps[i], bufs); err != nil {
			return err
		}
	}
	return nil
}

func (r replay) Close() {}

// TestPlanner: a backend with the whole-plan hook gets each compiled
// program once, and every run goes through the plan.
func TestPlanner(t *testing.T) {
	ctx := context.Background()
	b := &planning{Backend: cpu.New()}
	e := graph.NewEngine(b)
	for i := range 3 {
		g := graph.New()
		x := g.InputF32("x", graph.Shape{2, 3}, []float32{1, 2, 3, 4, 5, float32(i)})
		vals, err := e.Eval(ctx, x.Softmax(-1).MulScalar(2))
		if err != nil {
			t.Fatal(err)
		}
		if v := vals[0].F32(); v[0] >= v[1] {
			t.Fatalf("run %d: %v", i, v)
		}
	}
	if b.plans != 1 || b.runs != 3 {
		t.Errorf("%d plans and %d plan runs for one program run three times, want 1 and 3", b.plans, b.runs)
	}
}

// fusing is a backend with kernels.FusingPlanner that records, for each
// step's output, what the engine says about it being read after the run.
type fusing struct {
	limited
	after map[kernels.Op]bool // by the op that wrote it
	steps []kernels.Step      // the last run planned
}

func (f *fusing) Plan(steps []kernels.Step) (kernels.Plan, error) {
	return nil, errors.New("Plan called on a FusingPlanner")
}

func (f *fusing) PlanFusing(steps []kernels.Step, readAfter func(kernels.View) bool) (kernels.Plan, error) {
	for _, s := range steps {
		f.after[s.Op] = readAfter(s.Out[0])
	}
	f.steps = steps
	return replay{&planning{}, steps}, nil
}

// TestFusingKeepsProductInputs: for a FusingPlanner, the elementwise step
// right after an int8 product that reads its result (a residual add a
// backend may merge into the product's stores) never writes over the
// product's input, which the arena would otherwise hand it as that
// input's last use.
func TestFusingKeepsProductInputs(t *testing.T) {
	ctx := context.Background()
	b := &fusing{limited: limited{cpu.New(), map[kernels.Op]bool{kernels.OpFused: true, kernels.OpLinearQ: true}}, after: map[kernels.Op]bool{}}
	g := graph.New()
	const K, N = 16, 16
	x := g.InputF32("x", graph.Shape{1, K}, make([]float32, K))
	wq := make([]byte, N*K)
	for i := range wq {
		wq[i] = byte(i * 7)
	}
	s := g.ParamF32("s", graph.Shape{}, []float32{0.01})
	z := g.Param("z", graph.U8, graph.Shape{}, []byte{128})
	h := x.Exp()                                                        // the product's input, in the arena
	y := h.LinearQ(g.Param("w", graph.U8, graph.Shape{N, K}, wq), s, z) // last use of h
	r := y.Add(x)                                                       // may be merged into the product
	out := r.Exp().Add(r)
	if _, err := graph.NewEngine(b).Eval(ctx, out); err != nil {
		t.Fatal(err)
	}
	found := false
	for i := 0; i+1 < len(b.steps); i++ {
		lin, next := b.steps[i], b.steps[i+1]
		if lin.Op != kernels.OpLinearQ || next.Op != kernels.OpFused {
			continue
		}
		found = true
		in, o := lin.In[0], next.Out[0]
		if in.Slot == o.Slot {
			ilo, ihi := in.Span()
			olo, ohi := o.Span()
			if ilo < ohi && olo < ihi {
				t.Errorf("the step after the product writes elements %d–%d of slot %d, over the product's input (%d–%d)", olo, ohi, o.Slot, ilo, ihi)
			}
		}
	}
	if !found {
		t.Fatalf("no product followed by an elementwise step in %d steps", len(b.steps))
	}
}

// TestFusingPlannerReadAfter: a device run's intermediate is read after it
// when a host run reads it, or when it is a program output; one read only
// inside its run is not.
func TestFusingPlannerReadAfter(t *testing.T) {
	ctx := context.Background()
	b := &fusing{limited: limited{cpu.New(), map[kernels.Op]bool{kernels.OpFused: true, kernels.OpLayerNorm: true, kernels.OpMatMul: true}}, after: map[kernels.Op]bool{}}
	g := graph.New()
	x := g.InputF32("x", graph.Shape{2, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8})
	w := g.ParamF32("w", graph.Shape{4, 4}, []float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})
	h := x.MatMul(w).Softmax(-1)                                     // the product is read by the host's softmax
	y := h.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5).MatMul(w) // the norm only by the product after it
	vals, err := graph.NewEngine(b).Eval(ctx, y)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals[0].F32()) != 8 {
		t.Fatalf("output %v", vals[0].F32())
	}
	want := map[kernels.Op]bool{kernels.OpLayerNorm: false, kernels.OpMatMul: true}
	for op, w := range want {
		if got, ok := b.after[op]; !ok || got != w {
			t.Errorf("%s's output read after its run: %v (seen %v), want %v", op, got, ok, w)
		}
	}
}
