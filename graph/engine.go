package graph

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
)

// Engine compiles graphs for one backend and caches what compilation
// produces: programs by graph structure and input shapes, device copies of
// weights, and folded weight-only subgraphs.
//
// An Engine is safe for concurrent use, and so is running several of its
// Programs at once (a VAD, an encoder and a decoder on one engine): each
// Program runs on a queue of its own, and reading its outputs waits for that
// queue only. A Program itself is used by one goroutine at a time. A State
// is used by one Program's runs at a time; a program that reads a State
// another program wrote sees the write once the writer's results were read
// (Output, Read, Eval) or the writer was closed.
//
// Steps the backend does not support (kernels.Supporter) run on a host
// backend, with the transfers inserted by the compiler; see WithHost.
type Engine struct {
	backend kernels.Backend
	support kernels.Supporter // nil: the backend runs every step
	planner kernels.Planner   // nil: steps are launched one by one
	mapper  kernels.HostMapper

	hostOnce sync.Once
	host     kernels.Backend // runs unsupported steps; found when first needed
	hostErr  error

	mu        sync.Mutex
	plans     map[string]*plan // bounded by planLimit (cache.go)
	planBytes int64            // footprint of the cached plans
	planLimit int64
	tick      uint64 // clock of the least-recently-used orders
	params    map[paramKey]kernels.Buffer
	consts    map[string]kernels.Buffer
	folded    map[string]kernels.Buffer
	constUses map[kernels.Buffer]*constUse      // the plans holding each constant and folded value
	constHost map[kernels.Buffer][]byte         // host bytes behind every constant buffer
	hostConst map[kernels.Buffer]kernels.Buffer // the host backend's copy of a constant
	free      map[poolKey][]idleBuf             // idle program buffers by side and size, oldest first
	pool      [2]poolSide                       // buffer bytes of the device and the host
	poolLimit int64                             // idle bytes kept per side; <0: adaptive
	queues    [2][]kernels.Queue                // idle queues: device, host
	compiles  int64
	builds    int64

	planEvictions, bufEvictions int64

	transfers     atomic.Int64
	transferBytes atomic.Int64
}

type paramKey struct {
	ptr uintptr
	n   int
}

// Option configures an Engine.
type Option func(*Engine)

// WithHost sets the backend that runs steps the engine's backend does not
// support. It must address host memory (kernels.HostMapper), as the CPU
// backend does. Without it the engine opens the registered "cpu" backend
// the first time a program needs one.
func WithHost(h kernels.Backend) Option {
	return func(e *Engine) {
		e.hostOnce.Do(func() {
			e.host = h
			if _, ok := h.(kernels.HostMapper); !ok {
				e.hostErr = fmt.Errorf("graph: host backend %s does not address host memory", h.Name())
			}
		})
	}
}

// NewEngine returns an engine that runs programs on b.
func NewEngine(b kernels.Backend, opts ...Option) *Engine {
	e := &Engine{
		backend:   b,
		plans:     make(map[string]*plan),
		params:    make(map[paramKey]kernels.Buffer),
		consts:    make(map[string]kernels.Buffer),
		folded:    make(map[string]kernels.Buffer),
		constUses: make(map[kernels.Buffer]*constUse),
		constHost: make(map[kernels.Buffer][]byte),
		hostConst: make(map[kernels.Buffer]kernels.Buffer),
		free:      make(map[poolKey][]idleBuf),
		planLimit: DefaultPlanCacheBytes,
		poolLimit: -1,
	}
	e.support, _ = b.(kernels.Supporter)
	e.planner, _ = b.(kernels.Planner)
	e.mapper, _ = b.(kernels.HostMapper)
	for _, o := range opts {
		o(e)
	}
	return e
}

// Backend returns the engine's backend.
func (e *Engine) Backend() kernels.Backend { return e.backend }

// hostBackend returns the backend for unsupported steps.
func (e *Engine) hostBackend() (kernels.Backend, error) {
	e.hostOnce.Do(func() {
		h, err := kernels.Open("cpu", kernels.Options{})
		if err != nil {
			e.hostErr = fmt.Errorf("graph: %s needs a host backend for the steps it does not run: %w", e.backend.Name(), err)
			return
		}
		e.host = h
		if _, ok := h.(kernels.HostMapper); !ok {
			e.hostErr = fmt.Errorf("graph: host backend %s does not address host memory", h.Name())
		}
	})
	return e.host, e.hostErr
}

// Stats are an engine's counters, for scorecards.
type Stats struct {
	// Compiles counts programs compiled: cache misses of Compile.
	Compiles int64
	// GraphBuilds counts graphs handed to Compile or Eval: each was built
	// by model code and hashed, whether or not its program was cached.
	GraphBuilds int64
	// Transfers counts copies between the backend and the host backend
	// that partitioned programs made, and TransferBytes their size.
	Transfers, TransferBytes int64
	// CachedPlans is the number of compiled programs the cache holds now,
	// CachedPlanBytes their estimated size, and PlanEvictions how many it
	// has dropped (see WithPlanCache).
	CachedPlans, CachedPlanBytes, PlanEvictions int64
	// LiveBytes is the size of the buffers open programs hold now, on the
	// device and the host together, and IdleBytes of those closed programs
	// left for reuse; PeakNeedBytes is the most that open programs have
	// needed at once (they may hold larger buffers), which sets the
	// adaptive bound of the pool, and BufferEvictions counts the idle
	// buffers freed to keep within it (see WithBufferPool). States and
	// constants are not counted.
	LiveBytes, IdleBytes, PeakNeedBytes, BufferEvictions int64
	// Constants counts the constant buffers that plans hold (Consts and
	// folded values, not weights), and ConstantBytes their size: a
	// constant goes when the last plan that holds it does.
	Constants, ConstantBytes int64
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Stats{
		Compiles: e.compiles, GraphBuilds: e.builds, Transfers: e.transfers.Load(), TransferBytes: e.transferBytes.Load(),
		CachedPlans: int64(len(e.plans)), CachedPlanBytes: e.planBytes, PlanEvictions: e.planEvictions,
		BufferEvictions: e.bufEvictions,
	}
	for b := range e.constUses {
		st.Constants++
		st.ConstantBytes += int64(b.Bytes())
	}
	for _, s := range e.pool {
		st.LiveBytes += s.held
		st.IdleBytes += s.idle
		st.PeakNeedBytes += s.peak
	}
	return st
}

// Compiles returns how many programs the engine has compiled; a cache hit
// does not count, a shape compiled again after its plan left the cache
// does.
func (e *Engine) Compiles() int64 { return e.Stats().Compiles }

// wrapConst wraps host bytes as a constant buffer and remembers them, so a
// host run of a partitioned program reads the same constant without a copy.
// The caller holds e.mu.
func (e *Engine) wrapConst(data []byte) (kernels.Buffer, error) {
	b, err := e.backend.Wrap(data)
	if err != nil {
		return nil, err
	}
	e.constHost[b] = data
	return b, nil
}

// constBuffer returns the engine's buffer for a param (by address) or
// constant (by content), wrapping it on first use.
func (e *Engine) constBuffer(n *node) (kernels.Buffer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n.op == opParam {
		k := paramKey{uintptr(unsafe.Pointer(unsafe.SliceData(n.data))), len(n.data)}
		if b, ok := e.params[k]; ok {
			return b, nil
		}
		b, err := e.wrapConst(n.data)
		if err != nil {
			return nil, fmt.Errorf("graph: param %s: %w", n.name, err)
		}
		e.params[k] = b
		return b, nil
	}
	k := string(appendNodeKey(nil, n, nil, nil))
	if b, ok := e.consts[k]; ok {
		e.constUses[b].n++
		return b, nil
	}
	data := n.data
	if len(data) == 0 {
		data = make([]byte, 1) // backends need a non-empty buffer
	}
	b, err := e.wrapConst(data)
	if err != nil {
		return nil, fmt.Errorf("graph: constant: %w", err)
	}
	e.consts[k] = b
	e.constUses[b] = &constUse{n: 1, key: k}
	return b, nil
}

// constUse counts the holds on a constant buffer (a Const's or a folded
// value's): one for each plan that binds it, taken when the plan is built.
// A plan's release drops its holds, and a constant that no plan holds is
// freed: the constants of shapes a long run has left behind (a chunk's
// length) would otherwise stay in device memory for the engine's life.
// Weights (Param) are the model's and are not counted.
type constUse struct {
	n      int
	key    string // in e.consts or, when folded, e.folded
	folded bool
}

// dropConst gives up one hold on constant buffer b (not a weight's),
// freeing b when it was the last.
func (e *Engine) dropConst(b kernels.Buffer) {
	e.mu.Lock()
	u := e.constUses[b]
	if u == nil {
		e.mu.Unlock()
		return
	}
	if u.n--; u.n > 0 {
		e.mu.Unlock()
		return
	}
	delete(e.constUses, b)
	if u.folded {
		delete(e.folded, u.key)
	} else {
		delete(e.consts, u.key)
	}
	delete(e.constHost, b)
	hb := e.hostConst[b]
	delete(e.hostConst, b)
	e.mu.Unlock()
	e.backend.Free(b)
	if hb != nil {
		e.host.Free(hb)
	}
}

// dropConsts gives up a hold on each constant buffer in bufs (weights and
// nil entries, which hold nothing, are passed over).
func (e *Engine) dropConsts(bufs []kernels.Buffer) {
	for _, b := range bufs {
		e.dropConst(b)
	}
}

// hostConstBuffer returns the host backend's buffer for constant buffer b.
func (e *Engine) hostConstBuffer(h kernels.Backend, b kernels.Buffer) (kernels.Buffer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if hb, ok := e.hostConst[b]; ok {
		return hb, nil
	}
	data, ok := e.constHost[b]
	if !ok {
		return nil, fmt.Errorf("graph: internal: constant buffer without host bytes")
	}
	hb, err := h.Wrap(data)
	if err != nil {
		return nil, fmt.Errorf("graph: host copy of a constant: %w", err)
	}
	e.hostConst[b] = hb
	return hb, nil
}

// getQueue returns an idle queue of the device (or of the host backend).
func (e *Engine) getQueue(host bool) (kernels.Queue, error) {
	i := 0
	if host {
		i = 1
	}
	e.mu.Lock()
	if l := e.queues[i]; len(l) > 0 {
		q := l[len(l)-1]
		e.queues[i] = l[:len(l)-1]
		e.mu.Unlock()
		return q, nil
	}
	e.mu.Unlock()
	b := e.backend
	if host {
		b = e.host
	}
	q, err := b.NewQueue()
	if err != nil {
		return nil, fmt.Errorf("graph: new %s queue: %w", b.Name(), err)
	}
	return q, nil
}

// putQueue makes an idle queue (its work finished) available again.
func (e *Engine) putQueue(host bool, q kernels.Queue) {
	if q == nil {
		return
	}
	i := 0
	if host {
		i = 1
	}
	e.mu.Lock()
	e.queues[i] = append(e.queues[i], q)
	e.mu.Unlock()
}

// withQueue runs f on an idle device queue and waits for its work.
func (e *Engine) withQueue(ctx context.Context, f func(kernels.Queue) error) error {
	q, err := e.getQueue(false)
	if err != nil {
		return err
	}
	err = f(q)
	if serr := q.Sync(ctx); err == nil {
		err = serr
	}
	e.putQueue(false, q)
	return err
}

// Compile returns a program computing outs (tensors of one graph; effect
// tokens from Assign included). Compiling a graph whose structure and
// shapes match an earlier one reuses that compilation.
func (e *Engine) Compile(ctx context.Context, outs ...Tensor) (*Program, error) {
	return e.compile(ctx, false, outs)
}

// compile is Compile for a program that is brief (run once, by Eval) or
// not; see getBuf.
func (e *Engine) compile(ctx context.Context, brief bool, outs []Tensor) (*Program, error) {
	if len(outs) == 0 {
		return nil, fmt.Errorf("graph: compile: no outputs requested")
	}
	g := outs[0].g
	ids := make([]uint32, len(outs))
	for i, t := range outs {
		if t.g == nil {
			return nil, fmt.Errorf("graph: compile: output %d is the zero Tensor", i)
		}
		if t.g != g {
			return nil, fmt.Errorf("graph: compile: output %d belongs to another graph", i)
		}
		if err := t.Err(); err != nil {
			return nil, err
		}
		ids[i] = t.id
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("graph: compile: %w", err)
	}
	c := newCompiler(e, g, ids, true)
	key := structureKey(g, c.order, c.pos, ids)
	e.mu.Lock()
	p := e.lookupPlan(key)
	e.builds++
	e.mu.Unlock()
	if p == nil {
		var err error
		p, err = c.build()
		if err != nil {
			return nil, err
		}
		p = e.addPlan(key, p)
	}
	return e.newProgram(p, g, c.orig, brief, false)
}
