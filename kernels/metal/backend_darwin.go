//go:build darwin

package metal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/metal/mtl"
)

// probed caches the answer of probe: a documented process-wide fact (is
// there a usable Metal GPU), found once.
var probed struct {
	once sync.Once
	err  error
}

// probe reports why Metal cannot run here: the frameworks do not load, no
// device, or a GPU without simdgroup matrices (before Apple7: Intel Macs).
func probe() error {
	probed.once.Do(func() {
		th, err := mtl.NewThread()
		if err != nil {
			probed.err = err
			return
		}
		defer th.Close()
		probed.err = th.Do(func() error {
			d, err := mtl.DefaultDevice()
			if err != nil {
				return err
			}
			defer d.Release()
			if !d.SupportsFamily(mtl.FamilyApple7) {
				return fmt.Errorf("%s is not an Apple7-family GPU (Apple silicon): the kernels need simdgroup matrices", d.Name())
			}
			return nil
		})
	})
	return probed.err
}

func open(o kernels.Options) (kernels.Backend, error) { return New(o) }

// Backend runs kernels on the system's Metal GPU, in shared (unified)
// memory. Its methods are safe for concurrent use; every Metal call runs on
// the backend's thread.
type Backend struct {
	th      *mtl.Thread
	dev     *mtl.Device
	name    string
	page    int
	maxBuf  int
	fixed   mtl.Library
	archive *mtl.Archive
	arPath  string

	mu                     sync.Mutex
	pipes                  map[string]mtl.Pipeline
	libs                   map[string]mtl.Library
	added                  bool // pipelines added to the archive since it was loaded
	closed                 bool
	dispatches, live, peak atomic.Int64
}

// buffer is a Metal buffer in shared storage and the host's view of it.
type buffer struct {
	mb      mtl.Buffer
	off     int    // byte offset of the data within mb (no-copy wraps)
	host    []byte // the same bytes, as the CPU sees them
	wrapped bool
	size    int64
}

// Bytes returns the buffer's size.
func (b *buffer) Bytes() int { return len(b.host) }

// New opens the system's default Metal device and compiles the
// hand-written kernels.
func New(opts kernels.Options) (*Backend, error) {
	if err := probe(); err != nil {
		return nil, fmt.Errorf("metal: %w", err)
	}
	switch opts.Precision {
	case kernels.InvalidDType, kernels.F32:
	default:
		return nil, fmt.Errorf("metal: precision %s: the Metal backend computes products in f32 only", opts.Precision)
	}
	if opts.Ordinal != 0 {
		return nil, fmt.Errorf("metal: device %d: the backend opens the system's default device (0) only", opts.Ordinal)
	}
	th, err := mtl.NewThread()
	if err != nil {
		return nil, err
	}
	b := &Backend{th: th, page: os.Getpagesize(), pipes: map[string]mtl.Pipeline{}, libs: map[string]mtl.Library{}}
	err = th.Do(func() error {
		if b.dev, err = mtl.DefaultDevice(); err != nil {
			return err
		}
		b.name, b.maxBuf = b.dev.Name(), b.dev.MaxBufferLength()
		if !b.dev.UnifiedMemory() {
			return fmt.Errorf("metal: %s has no unified memory", b.name)
		}
		if b.arPath = archivePath(cacheDir(), b.name, mtl.OSVersion()); b.arPath != "" {
			b.archive, _ = b.dev.NewArchive(b.arPath) // none: pipelines are compiled every run
		}
		if b.fixed, err = b.dev.NewLibrary(fixedSource); err != nil {
			return fmt.Errorf("metal: compiling the hand-written kernels: %w", err)
		}
		return nil
	})
	if err != nil {
		th.Close()
		return nil, err
	}
	return b, nil
}

// Name returns "metal".
func (b *Backend) Name() string { return "metal" }

// Device names the GPU.
func (b *Backend) Device() string { return b.name + " (Metal, unified memory)" }

// Alloc returns zeroed shared memory.
func (b *Backend) Alloc(n int) (kernels.Buffer, error) {
	var buf *buffer
	err := b.th.Do(func() error {
		mb, err := b.dev.NewBuffer(n)
		if err != nil {
			return err
		}
		buf = &buffer{mb: mb, host: unsafe.Slice((*byte)(mb.Contents()), mtl.AllocLength(n))[:n:n], size: int64(n)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	clear(buf.host)
	b.account(buf.size)
	return buf, nil
}

func (b *Backend) account(n int64) {
	live := b.live.Add(n)
	for {
		p := b.peak.Load()
		if live <= p || b.peak.CompareAndSwap(p, live) {
			return
		}
	}
}

// Free releases a buffer of this backend.
func (b *Backend) Free(x kernels.Buffer) {
	buf, ok := x.(*buffer)
	if !ok || buf.host == nil {
		return
	}
	_ = b.th.Do(func() error { buf.mb.Release(); return nil })
	b.live.Add(-buf.size)
	buf.host = nil
}

// Wrap makes host bytes a read-only buffer: without a copy when they can
// be wrapped in whole pages (mtl.NoCopyRange: an mmap'd weight file), else
// copied once into shared memory.
func (b *Backend) Wrap(host []byte) (kernels.Buffer, error) {
	if len(host) > 0 {
		if _, length, off, ok := mtl.NoCopyRange(uintptr(unsafe.Pointer(&host[0])), len(host), b.page, b.maxBuf); ok {
			var buf *buffer
			err := b.th.Do(func() error {
				mb, err := b.dev.NewBufferNoCopy(unsafe.Add(unsafe.Pointer(&host[0]), -off), length)
				if err != nil {
					return err
				}
				buf = &buffer{mb: mb, off: off, host: host, wrapped: true}
				return nil
			})
			if err == nil {
				return buf, nil
			}
		}
	}
	x, err := b.Alloc(len(host))
	if err != nil {
		return nil, err
	}
	buf := x.(*buffer)
	copy(buf.host, host)
	buf.wrapped = true
	return buf, nil
}

// HostBytes implements kernels.HostMapper: the CPU addresses the buffer's
// memory itself, so the engine runs host steps on it in place.
func (b *Backend) HostBytes(x kernels.Buffer) ([]byte, bool) {
	buf, ok := x.(*buffer)
	if !ok || buf.host == nil {
		return nil, false
	}
	return buf.host, true
}

// Supports implements kernels.Supporter.
func (b *Backend) Supports(s *kernels.Step) bool { return supports(s) }

// Stats reports dispatches and memory.
func (b *Backend) Stats() kernels.Stats {
	return kernels.Stats{Dispatches: b.dispatches.Load(), PeakBytes: b.peak.Load(), LiveBytes: b.live.Load()}
}

// pipeline returns the compiled pipeline of a launch's kernel (on the
// backend's thread).
func (b *Backend) pipeline(l *launch) (mtl.Pipeline, error) {
	key := pipelineKey(l.src, l.fn)
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.pipes[key]; ok {
		return p, nil
	}
	lib := b.fixed
	if l.src != "" {
		lk := pipelineKey(l.src, "")
		var ok bool
		if lib, ok = b.libs[lk]; !ok {
			var err error
			if lib, err = b.dev.NewLibrary(l.src); err != nil {
				return mtl.Pipeline{}, fmt.Errorf("metal: compiling %s: %w", l.fn, err)
			}
			b.libs[lk] = lib
		}
	}
	fn, err := lib.Function(l.fn)
	if err != nil {
		return mtl.Pipeline{}, err
	}
	defer fn.Release()
	p, err := b.dev.NewPipeline(fn, b.archive)
	if err != nil {
		return mtl.Pipeline{}, fmt.Errorf("metal: pipeline of %s: %w", l.fn, err)
	}
	b.pipes[key] = p
	b.added = b.archive != nil
	return p, nil
}

// Close saves the binary archive (when pipelines were added) and releases
// the device. Buffers and queues must not be used after.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var err error
	_ = b.th.Do(func() error {
		if b.added && b.archive != nil {
			if mkErr := os.MkdirAll(cacheDir(), 0o755); mkErr == nil {
				err = b.archive.Save(b.arPath)
			}
		}
		for _, p := range b.pipes {
			p.Release()
		}
		for _, l := range b.libs {
			l.Release()
		}
		b.fixed.Release()
		if b.archive != nil {
			b.archive.Release()
		}
		b.dev.Release()
		return nil
	})
	b.th.Close()
	return err
}

// queue is a Metal command queue with the command buffer being encoded:
// launches are encoded into it and it is committed when the queue is
// waited for (Read, Sync, Write), so a program's run is one command buffer.
type queue struct {
	b      *Backend
	q      mtl.Queue
	cb     mtl.CommandBuffer
	open   bool
	closed bool
}

// NewQueue creates a command queue.
func (b *Backend) NewQueue() (kernels.Queue, error) {
	q := &queue{b: b}
	if err := b.th.Do(func() error {
		var err error
		q.q, err = b.dev.NewQueue()
		return err
	}); err != nil {
		return nil, err
	}
	return q, nil
}

func devBuf(x kernels.Buffer) (*buffer, error) {
	buf, ok := x.(*buffer)
	if !ok || buf == nil || buf.host == nil {
		return nil, fmt.Errorf("metal: buffer %T is not a live buffer of this backend", x)
	}
	return buf, nil
}

// Launch encodes a step into the queue's command buffer.
func (q *queue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l, err := prepare(s)
	if errors.Is(err, errEmpty) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metal: step %q: %w", s.Name, err)
	}
	bound := make([]*buffer, len(l.slots))
	for i, slot := range l.slots {
		if slot < 0 || slot >= len(bufs) {
			return fmt.Errorf("metal: step %q binds slot %d of a %d-slot table", s.Name, slot, len(bufs))
		}
		if bound[i], err = devBuf(bufs[slot]); err != nil {
			return fmt.Errorf("metal: step %q slot %d: %w", s.Name, slot, err)
		}
	}
	err = q.b.th.Do(func() error {
		p, err := q.b.pipeline(l)
		if err != nil {
			return err
		}
		group, err := groupSize(l, p.MaxThreads())
		if err != nil {
			return fmt.Errorf("metal: step %q: %w", s.Name, err)
		}
		if !q.open {
			if q.cb, err = q.q.CommandBuffer(); err != nil {
				return err
			}
			q.open = true
		}
		q.cb.SetPipeline(p)
		for i, buf := range bound {
			q.cb.SetBuffer(buf.mb, buf.off, l.firstBuf+i)
		}
		q.cb.SetBytes(l.params, l.paramIx)
		if l.threads > 0 {
			q.cb.DispatchThreads(l.threads, group)
		} else {
			q.cb.DispatchThreadgroups(l.groups, group)
		}
		return nil
	})
	if err != nil {
		return err
	}
	q.b.dispatches.Add(1)
	return nil
}

// wait commits the open command buffer and waits for it.
func (q *queue) wait(ctx context.Context) error {
	if !q.open {
		return ctx.Err()
	}
	q.open = false
	return q.b.th.Do(func() error {
		q.cb.Commit()
		return q.cb.Wait()
	})
}

// Write waits for the queue's work, then copies src into dst: the memory
// is shared, so a copy by the CPU is the transfer.
func (q *queue) Write(ctx context.Context, dst kernels.Buffer, off int, src []byte) error {
	d, err := devBuf(dst)
	if err != nil {
		return err
	}
	if d.wrapped {
		return errors.New("metal: write to a read-only (wrapped) buffer")
	}
	if off < 0 || off+len(src) > len(d.host) {
		return fmt.Errorf("metal: write of %d bytes at %d overflows a %d-byte buffer", len(src), off, len(d.host))
	}
	if err := q.wait(ctx); err != nil {
		return err
	}
	copy(d.host[off:], src)
	return nil
}

// Read waits for the queue's work, then copies from src.
func (q *queue) Read(ctx context.Context, dst []byte, src kernels.Buffer, off int) error {
	s, err := devBuf(src)
	if err != nil {
		return err
	}
	if off < 0 || off+len(dst) > len(s.host) {
		return fmt.Errorf("metal: read of %d bytes at %d overflows a %d-byte buffer", len(dst), off, len(s.host))
	}
	if err := q.wait(ctx); err != nil {
		return err
	}
	copy(dst, s.host[off:])
	return nil
}

// Sync waits for the queue's work.
func (q *queue) Sync(ctx context.Context) error { return q.wait(ctx) }

// Close waits for the queue's work and releases it.
func (q *queue) Close() error {
	if q.closed {
		return nil
	}
	q.closed = true
	err := q.wait(context.Background())
	_ = q.b.th.Do(func() error { q.q.Release(); return nil })
	return err
}

// cacheDir is where compiled kernels are kept between processes, as the
// CUDA backend's: $FORGE_KERNELS, else the user cache's forge/kernels;
// empty when neither can be found.
func cacheDir() string {
	if d := os.Getenv("FORGE_KERNELS"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "forge", "kernels")
}
