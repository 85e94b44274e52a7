package graph

import (
	"context"
	"fmt"
	"slices"

	"github.com/tensorforge/forge/kernels"
)

// run is a stretch of consecutive steps that execute on one side: the
// engine's backend, or the host backend for steps the backend does not
// support.
type run struct {
	lo, hi int          // steps[lo:hi]
	host   bool         // runs on the host backend
	plan   kernels.Plan // device runs of a kernels.Planner backend
	// Host runs only: the byte ranges of device buffers to copy to the
	// host before the run, and back after it.
	down, up []span
}

// span is a byte range [lo, hi) of the buffer in one slot.
type span struct{ slot, lo, hi int }

// partition splits the plan's steps into device and host runs, computes the
// transfers around each host run, and hands each device run to the
// backend's planner.
func (e *Engine) partition(p *plan) error {
	onHost := make([]bool, len(p.steps))
	if e.support != nil {
		for i := range p.steps {
			onHost[i] = !e.support.Supports(&p.steps[i])
		}
	}
	for lo := 0; lo < len(p.steps); {
		hi := lo + 1
		for hi < len(p.steps) && onHost[hi] == onHost[lo] {
			hi++
		}
		p.runs = append(p.runs, run{lo: lo, hi: hi, host: onHost[lo]})
		lo = hi
	}
	for i := range p.runs {
		r := &p.runs[i]
		if r.host {
			if _, err := e.hostBackend(); err != nil {
				p.release()
				s := &p.steps[r.lo]
				return fmt.Errorf("graph: step %d (%s, op %s) is not supported by %s: %w", r.lo, s.Name, s.Op, e.backend.Name(), err)
			}
			p.hostRuns++
			p.hostSteps += r.hi - r.lo
			r.down, r.up = p.transfers(p.steps[r.lo:r.hi])
			continue
		}
		if e.planner != nil {
			var pl kernels.Plan
			var err error
			if fp, ok := e.planner.(kernels.FusingPlanner); ok {
				pl, err = fp.PlanFusing(p.steps[r.lo:r.hi], p.readAfter(r.hi))
			} else {
				pl, err = e.planner.Plan(p.steps[r.lo:r.hi])
			}
			if err != nil {
				p.release()
				return fmt.Errorf("graph: %s: planning steps %d-%d: %w", e.backend.Name(), r.lo, r.hi-1, err)
			}
			r.plan = pl
		}
	}
	return nil
}

// readAfter returns whether elements of a view may be read once steps
// [0, hi) have run: any buffer but the arena may be (program outputs and
// states by the caller, constants and inputs again on the next run); an
// arena range only if a later step reads bytes of it (conservatively, even
// after a later step has rewritten them).
func (p *plan) readAfter(hi int) func(v kernels.View) bool {
	return func(v kernels.View) bool {
		if v.Slot != 0 {
			return true
		}
		lo, end := v.Span()
		sz := max(v.DType.Size(), 1)
		lo, end = lo*sz, end*sz
		for _, st := range p.steps[hi:] {
			for _, u := range st.In {
				if u.Slot != 0 {
					continue
				}
				ulo, uend := u.Span()
				usz := max(u.DType.Size(), 1)
				if ulo*usz < end && uend*usz > lo {
					return true
				}
			}
		}
		return false
	}
}

// transfers returns what a host run must copy from the device before it
// runs (the ranges it reads that it has not written itself, and the gaps of
// strided outputs, which the upload would otherwise overwrite with stale
// bytes) and what it copies back after (every range it writes). Constants
// need neither: the host has them already.
func (p *plan) transfers(steps []kernels.Step) (down, up []span) {
	written := map[int][]span{}
	isConst := func(slot int) bool { return slot >= p.constSlot(0) && slot < p.inputSlot(0) }
	bytesOf := func(v kernels.View) (span, bool) {
		lo, hi := v.Span()
		if hi <= lo || isConst(v.Slot) {
			return span{}, false
		}
		sz := max(v.DType.Size(), 1)
		return span{v.Slot, lo * sz, hi * sz}, true
	}
	need := func(s span) { down = append(down, subtract(s, written[s.slot])...) }
	for _, st := range steps {
		for _, v := range st.In {
			if s, ok := bytesOf(v); ok {
				need(s)
			}
		}
		for _, v := range st.Out {
			s, ok := bytesOf(v)
			if !ok {
				continue
			}
			if st.Op == kernels.OpSliceUpdate || v.Len()*max(v.DType.Size(), 1) != s.hi-s.lo {
				// Partly written (a window of a state, a strided view):
				// keep the device's bytes around what the step writes.
				need(s)
			}
			written[s.slot] = append(written[s.slot], s)
			up = append(up, s)
		}
	}
	return merge(down), merge(up)
}

// subtract returns the parts of s not covered by any span of cover (all in
// s's slot).
func subtract(s span, cover []span) []span {
	parts := []span{s}
	for _, c := range cover {
		var next []span
		for _, p := range parts {
			if c.hi <= p.lo || c.lo >= p.hi {
				next = append(next, p)
				continue
			}
			if p.lo < c.lo {
				next = append(next, span{p.slot, p.lo, c.lo})
			}
			if c.hi < p.hi {
				next = append(next, span{p.slot, c.hi, p.hi})
			}
		}
		parts = next
	}
	return parts
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int {
		if a.slot != b.slot {
			return a.slot - b.slot
		}
		return a.lo - b.lo
	})
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].slot == s.slot && s.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// bindHost gives a partitioned program its host buffer table: the host
// backend's copies of the constants, and for every other slot a mirror
// (memory of its own, or the device buffer's own bytes where the backend
// shares memory with the host).
func (p *Program) bindHost() error {
	e := p.e
	h, err := e.hostBackend()
	if err != nil {
		return err
	}
	if p.hq, err = e.getQueue(true); err != nil {
		return err
	}
	mapper := h.(kernels.HostMapper)
	alias, _ := h.(kernels.Aliaser)
	n := len(p.bufs)
	p.hbufs = make([]kernels.Buffer, n)
	p.hmem = make([][]byte, n)
	p.owned = make([]bool, n)
	p.unified = e.mapper != nil && alias != nil
	for i, b := range p.bufs {
		if i >= p.p.constSlot(0) && i < p.p.inputSlot(0) {
			if p.hbufs[i], err = e.hostConstBuffer(h, b); err != nil {
				return err
			}
			continue
		}
		if p.unified {
			if mem, ok := e.mapper.HostBytes(b); ok {
				if p.hbufs[i], err = alias.Alias(mem); err != nil {
					return fmt.Errorf("graph: host alias of slot %d: %w", i, err)
				}
				p.hmem[i] = mem
				continue
			}
			p.unified = false
		}
		if p.hbufs[i], err = e.getBuf(true, b.Bytes(), p.brief); err != nil {
			return fmt.Errorf("graph: host mirror of slot %d: %w", i, err)
		}
		p.owned[i] = true
		p.hmem[i], _ = mapper.HostBytes(p.hbufs[i])
	}
	return nil
}

// runHost runs a host run: fetch what it reads from the device, run its
// steps on the host backend, put what it wrote back. On shared memory the
// copies become a wait for the device's queue.
func (p *Program) runHost(ctx context.Context, r *run) error {
	e := p.e
	if p.unified {
		if err := p.q.Sync(ctx); err != nil {
			return fmt.Errorf("graph: waiting for %s before host steps: %w", e.backend.Name(), err)
		}
	} else {
		for _, s := range r.down {
			if err := p.q.Read(ctx, p.hmem[s.slot][s.lo:s.hi], p.bufs[s.slot], s.lo); err != nil {
				return fmt.Errorf("graph: copy to host before step %d: %w", r.lo, err)
			}
			e.transfers.Add(1)
			e.transferBytes.Add(int64(s.hi - s.lo))
		}
	}
	if err := launch(ctx, p.hq, p.p.steps, r.lo, r.hi, p.hbufs); err != nil {
		return err
	}
	if err := p.hq.Sync(ctx); err != nil {
		return fmt.Errorf("graph: host steps %d-%d: %w", r.lo, r.hi-1, err)
	}
	if p.unified {
		return nil
	}
	for _, s := range r.up {
		if err := p.q.Write(ctx, p.bufs[s.slot], s.lo, p.hmem[s.slot][s.lo:s.hi]); err != nil {
			return fmt.Errorf("graph: copy to %s after step %d: %w", e.backend.Name(), r.hi-1, err)
		}
		e.transfers.Add(1)
		e.transferBytes.Add(int64(s.hi - s.lo))
	}
	return nil
}
