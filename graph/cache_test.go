package graph_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// meteredBackend is the CPU backend counting the bytes it has allocated
// and not yet freed, and the plans it has handed out and closed.
type meteredBackend struct {
	*cpu.Backend
	outstanding, maxOutstanding atomic.Int64
	allocs, allocBytes          atomic.Int64
	plans, closed               atomic.Int64
	reclaims                    atomic.Int64
}

// Reclaim counts the engine's requests to return freed memory.
func (m *meteredBackend) Reclaim() {
	m.reclaims.Add(1)
	m.Backend.Reclaim()
}

func (m *meteredBackend) Alloc(n int) (kernels.Buffer, error) {
	b, err := m.Backend.Alloc(n)
	if err == nil {
		m.allocs.Add(1)
		m.allocBytes.Add(int64(n))
		now := m.outstanding.Add(int64(n))
		for {
			old := m.maxOutstanding.Load()
			if now <= old || m.maxOutstanding.CompareAndSwap(old, now) {
				break
			}
		}
	}
	return b, err
}

func (m *meteredBackend) Free(b kernels.Buffer) {
	m.outstanding.Add(-int64(b.Bytes()))
	m.Backend.Free(b)
}

// plannedBackend adds kernels.Planner to a meteredBackend.
type plannedBackend struct{ *meteredBackend }

func (p plannedBackend) Plan(steps []kernels.Step) (kernels.Plan, error) {
	p.plans.Add(1)
	return &meteredPlan{m: p.meteredBackend, steps: steps}, nil
}

// meteredPlan replays its steps and fails when run after Close, as a
// backend whose recorded graph was destroyed would.
type meteredPlan struct {
	m      *meteredBackend
	steps  []kernels.Step
	closed atomic.Bool
}

func (p *meteredPlan) Run(ctx context.Context, q kernels.Queue, bufs []kernels.Buffer) error {
	if p.closed.Load() {
		return fmt.Errorf("run of a closed plan")
	}
	for i := range p.steps {
		if err := q.Launch(ctx, &p.steps[i], bufs); err != nil {
			return err
		}
	}
	return nil
}

func (p *meteredPlan) Close() {
	if p.closed.Swap(true) {
		panic("plan closed twice")
	}
	p.m.closed.Add(1)
}

// expGraph builds y = 2·(x − exp(x)) over n elements of x = 0, 1/n, ….
func expGraph(n int) (graph.Tensor, []float32) {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i) / float32(n)
	}
	g := graph.New()
	xt := g.InputF32("x", graph.Shape{n}, x)
	return xt.Exp().Neg().Add(xt).MulScalar(2), x
}

// checkExp evaluates expGraph(n) on e and checks the values.
func checkExp(t *testing.T, e *graph.Engine, n int) {
	t.Helper()
	y, x := expGraph(n)
	vals, err := e.Eval(context.Background(), y)
	if err != nil {
		t.Fatalf("n=%d: %v", n, err)
	}
	got := vals[0].F32()
	for _, i := range []int{0, n / 2, n - 1} {
		want := 2 * (x[i] - float32(math.Exp(float64(x[i]))))
		if d := got[i] - want; d > 1e-5 || d < -1e-5 {
			t.Fatalf("n=%d: y[%d] = %v, want %v", n, i, got[i], want)
		}
	}
}

// TestPlanCacheBound: the cache holds plans up to its byte bound, keeps
// the recently used ones, and compiles again what it dropped.
func TestPlanCacheBound(t *testing.T) {
	b := &meteredBackend{Backend: cpu.New()}
	e0 := graph.NewEngine(plannedBackend{b})
	checkExp(t, e0, 10)
	one := e0.Stats().CachedPlanBytes
	if one <= 0 {
		t.Fatalf("a cached plan of %d bytes", one)
	}

	tests := []struct {
		name  string
		limit int64
		keep  int64 // plans the cache can hold
	}{
		{"none", 0, 0},
		{"one", one, 1},
		{"four", 4*one + one/2, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &meteredBackend{Backend: cpu.New()}
			e := graph.NewEngine(plannedBackend{b}, graph.WithPlanCache(tt.limit))
			for n := 10; n < 30; n++ {
				checkExp(t, e, n)
			}
			st := e.Stats()
			if st.CachedPlans != tt.keep || st.CachedPlanBytes > tt.limit {
				t.Errorf("cache holds %d plans of %d bytes, want %d within %d", st.CachedPlans, st.CachedPlanBytes, tt.keep, tt.limit)
			}
			wantEvict := int64(0)
			if tt.keep > 0 {
				wantEvict = 20 - tt.keep // an uncached plan is never evicted
			}
			if st.Compiles != 20 || st.PlanEvictions != wantEvict {
				t.Errorf("%d compiles, %d evictions for 20 shapes, want 20, %d", st.Compiles, st.PlanEvictions, wantEvict)
			}
			// Every plan left the cache with no program open: all closed.
			if open := b.plans.Load() - b.closed.Load(); open != tt.keep {
				t.Errorf("%d backend plans not closed, want the %d cached", open, tt.keep)
			}
			checkExp(t, e, 29) // the most recent shape
			want := st.Compiles
			if tt.keep == 0 {
				want++
			}
			if c := e.Stats().Compiles; c != want {
				t.Errorf("the most recent shape again: %d compiles, want %d", c, want)
			}
			checkExp(t, e, 10) // dropped long ago
			if c := e.Stats().Compiles; c != want+1 {
				t.Errorf("a dropped shape again: %d compiles, want %d", c, want+1)
			}
		})
	}
}

// TestEvictedPlanOutlivesCache: a plan dropped from the cache while a
// program is open on it keeps working and is closed with that program.
func TestEvictedPlanOutlivesCache(t *testing.T) {
	ctx := context.Background()
	b := &meteredBackend{Backend: cpu.New()}
	e := graph.NewEngine(plannedBackend{b}, graph.WithPlanCache(1)) // room for the newest only
	y, x := expGraph(100)
	prog, err := e.Compile(ctx, y)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	checkExp(t, e, 200) // its plan pushes the first out of the cache
	if st := e.Stats(); st.PlanEvictions != 1 {
		t.Fatalf("%d evictions, want 1", st.PlanEvictions)
	}
	if c := b.closed.Load(); c != 0 {
		t.Fatalf("%d plans closed while a program is open on the dropped one and the other is cached", c)
	}
	for range 2 {
		if err := prog.SetIndex(ctx, 0, f32le(x)); err != nil {
			t.Fatal(err)
		}
		if err := prog.Run(ctx); err != nil {
			t.Fatalf("run on a dropped plan: %v", err)
		}
		got := make([]float32, 100)
		if err := prog.ReadF32(ctx, 0, got); err != nil {
			t.Fatal(err)
		}
		if want := 2 * (x[7] - float32(math.Exp(float64(x[7])))); math.Abs(float64(got[7]-want)) > 1e-5 {
			t.Fatalf("y[7] = %v, want %v", got[7], want)
		}
	}
	prog.Close()
	if c := b.closed.Load(); c != 1 {
		t.Errorf("%d plans closed after the last program on the dropped one closed, want 1", c)
	}
	prog.Close() // harmless: no second release
	if c := b.closed.Load(); c != 1 {
		t.Errorf("closing twice released again: %d closes", c)
	}
}

func f32le(x []float32) []byte {
	out := make([]byte, 4*len(x))
	for i, v := range x {
		u := math.Float32bits(v)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return out
}

// TestBufferPoolBound: programs of ever larger shapes (each just too large
// for the buffers the last one left) used to leave every buffer in the
// pool; the pool now frees the oldest beyond its bound, and what the
// backend holds stays within the bound plus one working set.
func TestBufferPoolBound(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name  string
		opts  []graph.Option
		bound func(peak int64) int64
	}{
		{"fixed 4 MiB", []graph.Option{graph.WithBufferPool(4 * mib)}, func(int64) int64 { return 4 * mib }},
		{"none", []graph.Option{graph.WithBufferPool(0)}, func(int64) int64 { return 0 }},
		// The default is twice the peak, at least 64 MiB; the shapes below
		// allocate about twice that in all.
		{"adaptive", nil, func(peak int64) int64 { return max(64*mib, 2*peak) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &meteredBackend{Backend: cpu.New()}
			e := graph.NewEngine(b, tt.opts...)
			for n := 64 << 10; n <= 2<<20; n = n * 9 / 8 {
				checkExp(t, e, n)
				st := e.Stats()
				if st.LiveBytes != 0 {
					t.Fatalf("n=%d: %d live bytes with no program open", n, st.LiveBytes)
				}
				bound := tt.bound(st.PeakNeedBytes)
				if st.IdleBytes > bound {
					t.Fatalf("n=%d: %d idle bytes, bound %d", n, st.IdleBytes, bound)
				}
				if out := b.outstanding.Load(); out != st.IdleBytes {
					t.Fatalf("n=%d: the backend holds %d bytes, the pool %d", n, out, st.IdleBytes)
				}
			}
			st := e.Stats()
			if st.BufferEvictions == 0 {
				t.Error("no idle buffer was freed")
			}
			if m, limit := b.maxOutstanding.Load(), tt.bound(st.PeakNeedBytes)+st.PeakNeedBytes; m > limit {
				t.Errorf("the backend held up to %d bytes, more than the bound and one working set (%d)", m, limit)
			}
		})
	}
}

// TestBufferPoolReuse: after one pass over a set of shapes the next
// passes run in the pooled buffers: nothing is allocated.
func TestBufferPoolReuse(t *testing.T) {
	b := &meteredBackend{Backend: cpu.New()}
	e := graph.NewEngine(b, graph.WithPlanCache(0)) // compile every time: only buffers are reused
	sizes := []int{1000, 5000, 1200, 70000, 3333, 69000, 800, 40000}
	for _, n := range sizes {
		checkExp(t, e, n)
	}
	warm := b.allocs.Load()
	for range 3 {
		for _, n := range sizes {
			checkExp(t, e, n)
		}
	}
	if n := b.allocs.Load() - warm; n != 0 {
		t.Errorf("%d buffers allocated after warm-up, want 0", n)
	}
}

// TestConcurrentEviction runs programs of many shapes from several
// goroutines on an engine whose caches hold almost nothing, so plans and
// buffers are dropped while other programs run (for -race).
func TestConcurrentEviction(t *testing.T) {
	b := &meteredBackend{Backend: cpu.New()}
	e := graph.NewEngine(plannedBackend{b}, graph.WithPlanCache(1), graph.WithBufferPool(64<<10))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				checkExp(t, e, 100+w*37+i*101)
			}
		})
	}
	wg.Wait()
	if open := b.plans.Load() - b.closed.Load(); open != e.Stats().CachedPlans {
		t.Errorf("%d backend plans open, %d cached", open, e.Stats().CachedPlans)
	}
	if st := e.Stats(); st.LiveBytes != 0 || st.IdleBytes > 64<<10 {
		t.Errorf("%d live and %d idle bytes after every program closed", st.LiveBytes, st.IdleBytes)
	}
}

// TestLargeRequestFreesSmallerIdle: a program that needs a large buffer
// no idle one can serve frees the smaller idle buffers, and has the
// backend return their memory, before it allocates; a small request keeps
// them. Then a program of the small size runs in the large buffer.
func TestLargeRequestFreesSmallerIdle(t *testing.T) {
	tests := []struct {
		name         string
		small, large int // floats of the two programs' tensors
		freed        bool
	}{
		{"large request", 1 << 20, 9 << 20, true}, // 36 MB tensors
		{"small request", 1 << 20, 2 << 20, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &meteredBackend{Backend: cpu.New()}
			e := graph.NewEngine(b)
			checkExp(t, e, tt.small)
			idle0, alloc0 := b.outstanding.Load(), b.allocBytes.Load()
			if idle0 == 0 || e.Stats().IdleBytes != idle0 {
				t.Fatalf("the small program left %d bytes, the pool %d idle", idle0, e.Stats().IdleBytes)
			}
			checkExp(t, e, tt.large)
			// The large program may reuse a small buffer of its own size
			// (a scalar's): everything else is freed.
			freed := idle0 + b.allocBytes.Load() - alloc0 - b.outstanding.Load()
			if tt.freed && freed < idle0-1024 || !tt.freed && freed != 0 {
				t.Errorf("the large program freed %d bytes of %d idle, want all (%v)", freed, idle0, tt.freed)
			}
			if got := b.reclaims.Load() > 0; got != tt.freed {
				t.Errorf("backend told to reclaim: %v, want %v", got, tt.freed)
			}
			if st := e.Stats(); st.IdleBytes != b.outstanding.Load() || st.LiveBytes != 0 {
				t.Errorf("pool: %d idle, %d live bytes; backend holds %d", st.IdleBytes, st.LiveBytes, b.outstanding.Load())
			}
			allocs := b.allocs.Load()
			checkExp(t, e, tt.small)
			if n := b.allocs.Load() - allocs; n != 0 {
				t.Errorf("the small program again allocated %d buffers", n)
			}
		})
	}
}

// TestBriefProgramsTakeAnyLargerBuffer: a program of one Eval runs in any
// larger idle buffer (it gives it back at once), while a compiled program,
// which may stay open, takes one at most twice its need and so never pins
// a much larger buffer.
func TestBriefProgramsTakeAnyLargerBuffer(t *testing.T) {
	tests := []struct {
		name   string
		brief  bool
		allocs bool // a small program after a large one allocates
	}{
		{"Eval", true, false},
		{"Compile", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &meteredBackend{Backend: cpu.New()}
			e := graph.NewEngine(b)
			checkExp(t, e, 100000)
			warm := b.allocs.Load()
			if tt.brief {
				checkExp(t, e, 1000)
			} else {
				y, _ := expGraph(1000)
				prog, err := e.Compile(context.Background(), y)
				if err != nil {
					t.Fatal(err)
				}
				prog.Close()
			}
			if got := b.allocs.Load() > warm; got != tt.allocs {
				t.Errorf("a program 100 times smaller allocated: %v, want %v", got, tt.allocs)
			}
		})
	}
}

// TestConstantsFollowPlans: a constant (and a folded value) lives as long
// as a plan that binds it. A run over ever new lengths, each with a
// constant of its length (positions, a ramp), keeps only the constants of
// the plans the cache holds; values shared by several plans stay while
// one of them does, and a folded value dropped with its plans is folded
// again when needed.
func TestConstantsFollowPlans(t *testing.T) {
	ctx := context.Background()
	w := make([]float32, 6)
	for i := range w {
		w[i] = float32(i + 1)
	}
	// y = (x + ramp) · 2wᵀ: the ramp is a constant of x's length; 2wᵀ is
	// folded from the weight.
	eval := func(e *graph.Engine, n int) []float32 {
		t.Helper()
		g := graph.New()
		x := g.InputF32("x", graph.Shape{n, 3}, make([]float32, 3*n))
		ramp := g.Arange(0, 1, 3*n, graph.F32).Reshape(n, 3)
		wt := g.ParamF32("w", graph.Shape{2, 3}, w).Transpose(0, 1).MulScalar(2)
		vals, err := e.Eval(ctx, x.Add(ramp).MatMul(wt))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		return vals[0].F32()
	}
	check := func(got []float32, n int) {
		t.Helper()
		for r := range n {
			for c := range 2 {
				var want float32
				for k := range 3 {
					want += float32(3*r+k) * 2 * w[3*c+k]
				}
				if got[2*r+c] != want {
					t.Fatalf("n=%d: y[%d,%d] = %v, want %v", n, r, c, got[2*r+c], want)
				}
			}
		}
	}
	for _, tt := range []struct {
		name  string
		opts  []graph.Option
		bound int64 // constants held after each run, at most
	}{
		{"no plan cache", []graph.Option{graph.WithPlanCache(0)}, 0},
		{"room for one plan", []graph.Option{graph.WithPlanCache(1)}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := graph.NewEngine(cpu.New(), tt.opts...)
			for n := 1; n <= 40; n++ {
				check(eval(e, n), n)
				if c := e.Stats().Constants; c > tt.bound {
					t.Fatalf("after length %d: %d constants held, want at most %d", n, c, tt.bound)
				}
			}
			check(eval(e, 7), 7) // folded again
		})
	}
	e := graph.NewEngine(cpu.New())
	for n := 1; n <= 40; n++ {
		check(eval(e, n), n)
	}
	if c := e.Stats().Constants; c != 41 { // the cache holds every plan: 40 ramps and one 2wᵀ
		t.Errorf("%d constants held with every plan cached, want 41", c)
	}
}

// TestConcurrentConstants: programs of many lengths, each with a
// constant of its length and a folded weight they share, from several
// goroutines on an engine that caches one plan, so constants are freed
// while other compilations take them (for -race).
func TestConcurrentConstants(t *testing.T) {
	ctx := context.Background()
	e := graph.NewEngine(plannedBackend{&meteredBackend{Backend: cpu.New()}}, graph.WithPlanCache(1))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				n := 1 + (w*7+i*3)%11
				g := graph.New()
				ramp := g.Arange(1, 1, n, graph.F32)
				y := ramp.Reshape(n, 1).MatMul(g.ParamF32("w", graph.Shape{1, 2}, []float32{1, 2}).MulScalar(3))
				vals, err := e.Eval(ctx, y)
				if err != nil {
					t.Error(err)
					return
				}
				got := vals[0].F32()
				for r := range n {
					if got[2*r] != float32(3*(r+1)) || got[2*r+1] != float32(6*(r+1)) {
						t.Errorf("n=%d: row %d = %v, want [%d %d]", n, r, got[2*r:2*r+2], 3*(r+1), 6*(r+1))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if c := e.Stats().Constants; c > 2 {
		t.Errorf("%d constants held with one plan cached, want at most 2", c)
	}
}

// stepRecorder is a planning CPU backend that keeps the steps it is given.
type stepRecorder struct {
	*cpu.Backend
	steps []kernels.Step
}

func (r *stepRecorder) Plan(steps []kernels.Step) (kernels.Plan, error) {
	r.steps = append(r.steps, steps...)
	return &meteredPlan{m: &meteredBackend{Backend: r.Backend}, steps: steps}, nil
}

// TestFullPrecision: the steps of a full-precision graph carry
// kernels.Step.F32, and such a graph does not share a compiled program
// with the same graph at the backend's precision.
func TestFullPrecision(t *testing.T) {
	ctx := context.Background()
	rec := &stepRecorder{Backend: cpu.New()}
	e := graph.NewEngine(rec)
	build := func(full bool) graph.Tensor {
		g := graph.New()
		if full {
			g.FullPrecision()
		}
		x := g.InputF32("x", graph.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
		return x.MatMul(g.ParamF32("w", graph.Shape{3, 2}, []float32{1, 0, 0, 1, 1, 1})).Gelu()
	}
	for _, full := range []bool{false, true} {
		rec.steps = nil
		if _, err := e.Eval(ctx, build(full)); err != nil {
			t.Fatal(err)
		}
		if len(rec.steps) == 0 {
			t.Fatalf("full %v: no plan made (a cached one reused?)", full)
		}
		for _, s := range rec.steps {
			if s.F32 != full {
				t.Errorf("full %v: step %s has F32 %v", full, s.Op, s.F32)
			}
		}
	}
	if c := e.Stats().Compiles; c != 2 {
		t.Errorf("%d programs compiled for the graph at two precisions, want 2", c)
	}
}
