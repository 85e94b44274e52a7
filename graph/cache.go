package graph

import (
	"math/bits"

	"github.com/tensorforge/forge/kernels"
)

// An engine caches two things that would otherwise grow with every new
// input shape a long run meets (each sentence of say, each utterance of
// listen): compiled plans and the idle buffers of closed programs. Both
// are bounded here and dropped least recently used first.

const (
	// DefaultPlanCacheBytes is the default bound of an engine's compiled
	// program cache (see WithPlanCache). A Kokoro plan is 100–300 kB and one
	// of Whisper's a few tens, so this keeps a few hundred: every shape a
	// model reuses stays compiled; shapes seen once (most sentence lengths)
	// age out.
	DefaultPlanCacheBytes = 64 << 20

	// poolFloor is the least idle memory the adaptive buffer pool may keep
	// (see WithBufferPool), so that small models never drop buffers.
	poolFloor = 64 << 20
)

// WithPlanCache bounds the compiled programs an engine keeps for reuse by
// their estimated size in bytes (DefaultPlanCacheBytes without this
// option); the least recently compiled or reused are dropped first. A
// dropped plan stays valid for the Programs still open on it and is
// released (a backend plan's Close: a CUDA graph, for instance) when the
// last of them closes. Zero keeps none: every Compile compiles.
func WithPlanCache(bytes int64) Option {
	return func(e *Engine) { e.planLimit = max(bytes, 0) }
}

// WithBufferPool bounds the bytes of idle buffers (left by closed programs
// for the next ones) that the engine keeps, on the device and on the host
// each; the least recently returned are freed first. Without this option
// the bound follows the workload: twice the most bytes its open programs
// have needed at once, and at least 64 MiB. Programs of new shapes then
// run in pooled buffers (see getBuf) instead of freeing and allocating:
// replayed against the buffer requests of say over 1,500 words (215 MB
// needed at peak), a bound of once the peak freed and allocated 6.7 GB in
// all, twice the peak allocated nothing beyond the pool's own 432 MB.
// Zero keeps none.
func WithBufferPool(bytes int64) Option {
	return func(e *Engine) { e.poolLimit = max(bytes, 0) }
}

// poolKey picks a free list: buffers of one size on the device or the host.
type poolKey struct {
	host bool
	size int
}

// idleBuf is a free-list entry with the time it was returned.
type idleBuf struct {
	b    kernels.Buffer
	used uint64
}

// poolSide is the buffer accounting of one side (device or host). Open
// programs may hold larger buffers than they need (see getBuf), so the
// adaptive bound follows what they need, not what they hold: else each
// larger buffer taken would raise the bound that lets the pool keep more.
type poolSide struct {
	held, idle int64 // bytes of buffers open programs hold, and idle ones
	need, peak int64 // bytes open programs asked for (size classes), and its high-water mark
}

func side(host bool) int {
	if host {
		return 1
	}
	return 0
}

// sizeClass rounds a request up to one of eight sizes per power of two (at
// most 12.5 % more; small ones to 64 bytes), so that programs of
// neighbouring shapes ask for equal sizes and reuse each other's buffers.
func sizeClass(n int) int {
	if n <= 1024 {
		return max((n+63)&^63, 64)
	}
	step := 1 << (bits.Len(uint(n-1)) - 4)
	return (n + step - 1) &^ (step - 1)
}

// getBuf returns a buffer of at least size bytes on the device (or on the
// host backend): an idle one of the same size class, else the smallest
// larger idle one, else a new one. Taking a larger one lets the programs of
// a new shape (the next sentence's length) run in memory that is already
// mapped instead of faulting in fresh pages, and spares the pool a new
// buffer and the eviction of an old one. A brief program (one Eval) may
// take any larger buffer, as it gives it back at once; others (Compile's,
// which may stay open for a whole run) take at most twice what they need,
// so that a small program never pins a large buffer.
func (e *Engine) getBuf(host bool, size int, brief bool) (kernels.Buffer, error) {
	size = sizeClass(size)
	s := &e.pool[side(host)]
	e.mu.Lock()
	fit := size
	if len(e.free[poolKey{host, size}]) == 0 {
		fit = 0
		for k, l := range e.free {
			if k.host == host && len(l) > 0 && k.size > size && (brief || k.size <= 2*size) && (fit == 0 || k.size < fit) {
				fit = k.size
			}
		}
	}
	s.need += int64(size)
	s.peak = max(s.peak, s.need)
	if l := e.free[poolKey{host, fit}]; fit > 0 && len(l) > 0 {
		b := l[len(l)-1].b
		e.free[poolKey{host, fit}] = l[:len(l)-1]
		s.idle -= int64(fit)
		s.held += int64(fit)
		e.mu.Unlock()
		return b, nil
	}
	s.held += int64(size)
	var smaller []kernels.Buffer
	if size >= largeBuf {
		smaller = e.dropSmaller(host, size)
	}
	e.mu.Unlock()
	be := e.backend
	if host {
		be = e.host
	}
	if len(smaller) > 0 {
		e.freeBufs(host, smaller)
		if r, ok := be.(reclaimer); ok {
			r.Reclaim()
		}
	}
	b, err := be.Alloc(size)
	if err != nil {
		e.mu.Lock()
		s.held -= int64(size)
		s.need -= int64(size)
		e.mu.Unlock()
		return nil, err
	}
	return b, nil
}

// largeBuf is the least request that makes room for itself (see
// dropSmaller).
const largeBuf = 32 << 20

// reclaimer is a backend whose freed buffers stay in the process until it
// is told to return them (the CPU backend: Go's garbage collector).
type reclaimer interface{ Reclaim() }

// dropSmaller takes off the free lists of one side the idle buffers
// smaller than size, a large request no idle buffer can serve, and
// returns them for freeing; getBuf then has the backend return their
// memory before it allocates. Without this, the first run of a program
// larger than any before it holds its new buffer beside all the idle
// ones, which the pool's bound (twice the peak need) lets stay: Kokoro's
// generator on a 10-s chunk allocated 176 MB while 162 MB of smaller idle
// buffers (the chunk's sources and decoder programs, the previous chunk's)
// stayed resident, a third of say's peak memory. The new buffer serves
// their sizes afterwards: a brief program takes any larger idle buffer,
// a compiled program one at most twice its need. The caller holds e.mu.
func (e *Engine) dropSmaller(host bool, size int) []kernels.Buffer {
	s := &e.pool[side(host)]
	var out []kernels.Buffer
	for k, l := range e.free {
		if k.host != host || k.size >= size {
			continue
		}
		for _, ib := range l {
			out = append(out, ib.b)
		}
		s.idle -= int64(k.size) * int64(len(l))
		e.bufEvictions += int64(len(l))
		delete(e.free, k)
	}
	return out
}

// putBuf returns a program's buffer, asked for as size bytes, for reuse,
// dropping the least recently returned idle buffers beyond the pool's
// bound.
func (e *Engine) putBuf(host bool, b kernels.Buffer, size int) {
	if b == nil {
		return
	}
	n := b.Bytes()
	s := &e.pool[side(host)]
	e.mu.Lock()
	e.tick++
	k := poolKey{host, n}
	e.free[k] = append(e.free[k], idleBuf{b, e.tick})
	s.held -= int64(n)
	s.need -= int64(sizeClass(size))
	s.idle += int64(n)
	evicted := e.trimPool(host)
	e.mu.Unlock()
	e.freeBufs(host, evicted)
}

// poolBound returns the idle bytes one side may keep. The caller holds e.mu.
func (e *Engine) poolBound(host bool) int64 {
	if e.poolLimit >= 0 {
		return e.poolLimit
	}
	return max(poolFloor, 2*e.pool[side(host)].peak)
}

// trimPool takes the least recently returned idle buffers of one side off
// the free lists until the side is within its bound, and returns them for
// freeing (after e.mu is released). The caller holds e.mu.
func (e *Engine) trimPool(host bool) []kernels.Buffer {
	s := &e.pool[side(host)]
	bound := e.poolBound(host)
	var out []kernels.Buffer
	for s.idle > bound {
		// Each free list is in order of return (getBuf takes from its
		// end), so the oldest idle buffer heads one of them.
		var oldest poolKey
		found := false
		for k, l := range e.free {
			if k.host == host && len(l) > 0 && (!found || l[0].used < e.free[oldest][0].used) {
				oldest, found = k, true
			}
		}
		if !found {
			break
		}
		l := e.free[oldest]
		out = append(out, l[0].b)
		if len(l) == 1 {
			delete(e.free, oldest)
		} else {
			e.free[oldest] = l[1:]
		}
		s.idle -= int64(oldest.size)
		e.bufEvictions++
	}
	return out
}

// freeBufs frees idle buffers taken off the free lists: no queue uses them
// (a program returns its buffers only after waiting for its queue).
func (e *Engine) freeBufs(host bool, bufs []kernels.Buffer) {
	be := e.backend
	if host {
		be = e.host
	}
	for _, b := range bufs {
		be.Free(b)
	}
}

// lookupPlan returns the cached plan for key, or nil, and counts the
// caller as one of its users. The caller holds e.mu.
func (e *Engine) lookupPlan(key string) *plan {
	p := e.plans[key]
	if p != nil {
		e.tick++
		p.used = e.tick
		p.users++
	}
	return p
}

// addPlan caches a newly built plan for key with the caller as its user
// (or, when another compilation of the same key finished first, returns
// that one and releases p), and drops the least recently used plans beyond
// the cache's bound.
func (e *Engine) addPlan(key string, p *plan) *plan {
	e.mu.Lock()
	if q := e.lookupPlan(key); q != nil {
		e.mu.Unlock()
		e.releasePlan(p)
		return q
	}
	e.compiles++
	p.key, p.bytes = key, p.footprint(key)
	p.users = 1
	var dropped []*plan
	if e.planLimit > 0 {
		e.tick++
		p.used, p.cached = e.tick, true
		e.plans[key] = p
		e.planBytes += p.bytes
		dropped = e.trimPlans()
	}
	e.mu.Unlock()
	for _, q := range dropped {
		e.releasePlan(q)
	}
	return p
}

// trimPlans drops the least recently used cached plans while the cache
// exceeds its bound (never the most recent one), and returns those that
// no open program uses, for release after e.mu is released. The caller
// holds e.mu.
func (e *Engine) trimPlans() []*plan {
	var out []*plan
	for e.planBytes > e.planLimit && len(e.plans) > 1 {
		var oldest *plan
		for _, p := range e.plans {
			if oldest == nil || p.used < oldest.used {
				oldest = p
			}
		}
		delete(e.plans, oldest.key)
		e.planBytes -= oldest.bytes
		oldest.cached = false
		e.planEvictions++
		if oldest.users == 0 {
			out = append(out, oldest)
		}
	}
	return out
}

// donePlan ends one user's hold on p (a program closed, or failed to
// open) and releases p when it has left the cache and nobody uses it.
func (e *Engine) donePlan(p *plan) {
	e.mu.Lock()
	p.users--
	last := p.users == 0 && !p.cached
	e.mu.Unlock()
	if last {
		e.releasePlan(p)
	}
}

// releasePlan releases p, which no program uses and the cache no longer
// holds: its backend plans and its holds on constants.
func (e *Engine) releasePlan(p *plan) {
	p.release()
	e.dropConsts(p.consts)
}

// release closes the backend plans of p's device runs.
func (p *plan) release() {
	for i := range p.runs {
		if pl := p.runs[i].plan; pl != nil {
			pl.Close()
			p.runs[i].plan = nil
		}
	}
}

// footprint estimates the bytes a cached plan keeps reachable: its key
// (the serialised graph) and its steps with their views and expressions.
func (p *plan) footprint(key string) int64 {
	const word = 8
	n := int64(len(key)) + 256
	for i := range p.steps {
		s := &p.steps[i]
		n += 160 // the Step, its slice headers, name and attribute
		for _, vs := range [][]kernels.View{s.In, s.Out} {
			for _, v := range vs {
				n += 80 + word*int64(len(v.Shape)+len(v.Strides))
			}
		}
		if s.Expr != nil {
			n += 64 + 24*int64(len(s.Expr.Code))
		}
	}
	return n + int64(len(p.runs))*128 + int64(len(p.inputs)+len(p.outputs))*64
}
