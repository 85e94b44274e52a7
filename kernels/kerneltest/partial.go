package kerneltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
)

// Partial is a test double of a device backend that runs only some ops: a
// new backend on its first day. It owns its buffers (the host cannot
// address them: no kernels.HostMapper, so an engine must copy), runs the
// steps it supports on kernels/cpu through buffers of its own behind
// them, rejects every other step, and counts launches and transfers.
type Partial struct {
	inner *cpu.Backend
	ops   []kernels.Op

	launches                          atomic.Int64
	writes, writeBytes, reads, rbytes atomic.Int64
	batches                           atomic.Int64
	wraps, wrapBytes                  atomic.Int64
	mu                                sync.Mutex
	perOp                             map[kernels.Op]int64
}

// NewPartial returns a backend that supports the given ops (OpFused and
// OpMatMul when none are given).
func NewPartial(ops ...kernels.Op) *Partial {
	if len(ops) == 0 {
		ops = []kernels.Op{kernels.OpFused, kernels.OpMatMul}
	}
	return &Partial{inner: cpu.New(), ops: slices.Clone(ops), perOp: map[kernels.Op]int64{}}
}

// AllOps lists every op of package kernels, for a Partial that supports
// everything (its steps still run through device-style buffers).
func AllOps() []kernels.Op {
	var ops []kernels.Op
	for op := kernels.OpInvalid + 1; !strings.HasPrefix(op.String(), "op("); op++ {
		ops = append(ops, op)
	}
	return ops
}

// partialBuffer is the double's device memory: a CPU buffer the host
// never sees.
type partialBuffer struct {
	inner kernels.Buffer
	n     int
}

// Bytes returns the buffer's size.
func (b *partialBuffer) Bytes() int { return b.n }

// Name returns "partial".
func (p *Partial) Name() string { return "partial" }

// Device lists the supported ops.
func (p *Partial) Device() string {
	names := make([]string, len(p.ops))
	for i, op := range p.ops {
		names[i] = op.String()
	}
	return "test double running " + strings.Join(names, ", ") + " on the cpu backend"
}

// Supports reports whether s's op is one of the double's.
func (p *Partial) Supports(s *kernels.Step) bool { return slices.Contains(p.ops, s.Op) }

// Alloc returns zeroed device memory.
func (p *Partial) Alloc(n int) (kernels.Buffer, error) {
	b, err := p.inner.Alloc(n)
	if err != nil {
		return nil, fmt.Errorf("partial: %w", err)
	}
	return &partialBuffer{inner: b, n: n}, nil
}

// Free releases a buffer of this backend.
func (p *Partial) Free(b kernels.Buffer) {
	if x, ok := b.(*partialBuffer); ok {
		p.inner.Free(x.inner)
	}
}

// Wrap makes host bytes a constant device buffer. A device would upload
// them once; the double references them, as its CPU kernels treat a
// wrapped weight (packed once) exactly as the CPU backend does.
func (p *Partial) Wrap(host []byte) (kernels.Buffer, error) {
	b, err := p.inner.Wrap(host)
	if err != nil {
		return nil, fmt.Errorf("partial: %w", err)
	}
	p.wraps.Add(1)
	p.wrapBytes.Add(int64(len(host)))
	return &partialBuffer{inner: b, n: len(host)}, nil
}

// NewQueue returns a queue of the double.
func (p *Partial) NewQueue() (kernels.Queue, error) {
	q, err := p.inner.NewQueue()
	if err != nil {
		return nil, fmt.Errorf("partial: %w", err)
	}
	return &partialQueue{p: p, q: q}, nil
}

// Stats returns the double's launches and the memory of the CPU behind it.
func (p *Partial) Stats() kernels.Stats {
	s := p.inner.Stats()
	s.Dispatches = p.launches.Load()
	return s
}

// PartialCounts are a Partial's counters.
type PartialCounts struct {
	Launches int64                // steps run
	PerOp    map[kernels.Op]int64 // steps run, by op
	// Writes and Reads count Queue.Write and Queue.Read calls: copies
	// from and to the host. WriteBytes and ReadBytes are their sizes.
	// A WriteBatch counts once in Batches and each of its writes in
	// Writes.
	Writes, WriteBytes, Reads, ReadBytes, Batches int64
	// Wraps counts constants handed over with Wrap (weights a device
	// uploads once), WrapBytes their size.
	Wraps, WrapBytes int64
}

// Counts returns the counters since the double was created.
func (p *Partial) Counts() PartialCounts {
	p.mu.Lock()
	per := make(map[kernels.Op]int64, len(p.perOp))
	for k, v := range p.perOp {
		per[k] = v
	}
	p.mu.Unlock()
	return PartialCounts{
		Launches: p.launches.Load(), PerOp: per,
		Writes: p.writes.Load(), WriteBytes: p.writeBytes.Load(),
		Reads: p.reads.Load(), ReadBytes: p.rbytes.Load(), Batches: p.batches.Load(),
		Wraps: p.wraps.Load(), WrapBytes: p.wrapBytes.Load(),
	}
}

// partialQueue forwards to a CPU queue after checking that every buffer is
// the double's own.
type partialQueue struct {
	p *Partial
	q kernels.Queue
}

func unwrap(b kernels.Buffer) (kernels.Buffer, error) {
	x, ok := b.(*partialBuffer)
	if !ok {
		return nil, fmt.Errorf("partial: buffer %T is not one of this backend's", b)
	}
	return x.inner, nil
}

func (q *partialQueue) Write(ctx context.Context, dst kernels.Buffer, off int, src []byte) error {
	d, err := unwrap(dst)
	if err != nil {
		return err
	}
	q.p.writes.Add(1)
	q.p.writeBytes.Add(int64(len(src)))
	return q.q.Write(ctx, d, off, src)
}

// WriteBatch makes the writes one by one (kernels.BatchWriter), so the
// graph engine's batched binding of inputs runs on the double too.
func (q *partialQueue) WriteBatch(ctx context.Context, ws []kernels.Write) error {
	q.p.batches.Add(1)
	for _, w := range ws {
		if err := q.Write(ctx, w.Dst, w.Off, w.Src); err != nil {
			return err
		}
	}
	return nil
}

func (q *partialQueue) Read(ctx context.Context, dst []byte, src kernels.Buffer, off int) error {
	s, err := unwrap(src)
	if err != nil {
		return err
	}
	q.p.reads.Add(1)
	q.p.rbytes.Add(int64(len(dst)))
	return q.q.Read(ctx, dst, s, off)
}

func (q *partialQueue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	if !q.p.Supports(s) {
		return fmt.Errorf("partial: step %s (op %s) is not supported", s.Name, s.Op)
	}
	inner := make([]kernels.Buffer, len(bufs))
	for i, b := range bufs {
		if b == nil {
			continue
		}
		x, err := unwrap(b)
		if err != nil {
			return fmt.Errorf("slot %d: %w", i, err)
		}
		inner[i] = x
	}
	q.p.launches.Add(1)
	q.p.mu.Lock()
	q.p.perOp[s.Op]++
	q.p.mu.Unlock()
	return q.q.Launch(ctx, s, inner)
}

func (q *partialQueue) Sync(ctx context.Context) error { return q.q.Sync(ctx) }

func (q *partialQueue) Close() error { return q.q.Close() }
