package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// queue is a CUDA stream with its pinned staging memory and error word.
//
// Writes are staged: Write copies the caller's bytes into pinned memory at
// once (no driver call, no hop to the backend's thread) and the copy to the
// device is issued at the start of the next call that goes to the thread
// (a launch, a plan run, a read). A decoder step therefore costs two hops:
// run, read. The staging memory is reused once the stream has been waited
// for.
type queue struct {
	b      *Backend
	stream driver.Stream

	stage   []byte // pinned
	used    int
	pending []staged

	errDev  driver.DevicePtr // one int: the first error a kernel reported
	errHost []byte           // pinned, 4 bytes

	scratch *buffer // per-queue workspace (im2col columns, half-precision copies)
	blasWS  *buffer // cuBLASLt's workspace
	args    driver.Args
	keyBuf  []byte // plan.key's storage

	closed bool
}

// staged is a write waiting in the staging memory.
type staged struct {
	dst    driver.DevicePtr
	lo, hi int // stage range
}

const initialStage = 1 << 20

// NewQueue creates a stream, its staging memory and its error word.
func (b *Backend) NewQueue() (kernels.Queue, error) {
	q := &queue{b: b}
	err := b.th.Do(func() error {
		var err error
		if q.stream, err = b.drv.StreamCreate(driver.StreamNonBlocking); err != nil {
			return err
		}
		if q.stage, err = b.drv.MemAllocHost(initialStage); err != nil {
			return err
		}
		q.errHost, err = b.drv.MemAllocHost(64)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: new queue: %w", err)
	}
	eb, err := b.Alloc(4)
	if err != nil {
		return nil, err
	}
	q.errDev = eb.(*buffer).ptr
	if b.blas != nil {
		ws, err := b.Alloc(b.blas.workspace)
		if err != nil {
			return nil, err
		}
		q.blasWS = ws.(*buffer)
	}
	return q, nil
}

func devBuf(x kernels.Buffer) (*buffer, error) {
	b, ok := x.(*buffer)
	if !ok || b == nil {
		return nil, errors.New("cuda: buffer from another backend")
	}
	return b, nil
}

// Write stages src for a copy into dst at off.
func (q *queue) Write(ctx context.Context, dst kernels.Buffer, off int, src []byte) error {
	return q.WriteBatch(ctx, []kernels.Write{{Dst: dst, Off: off, Src: src}})
}

// WriteBatch stages the writes, copying them into the staging memory on
// several cores at once (kernels.BatchWriter).
func (q *queue) WriteBatch(ctx context.Context, ws []kernels.Write) error {
	total := 0
	for _, w := range ws {
		d, err := devBuf(w.Dst)
		if err != nil {
			return err
		}
		if d.wrapped {
			return errors.New("cuda: write to a read-only (wrapped) buffer")
		}
		if w.Off < 0 || w.Off+len(w.Src) > d.n {
			return fmt.Errorf("cuda: write of %d bytes at %d overflows a %d-byte buffer", len(w.Src), w.Off, d.n)
		}
		total += roundUp(len(w.Src))
	}
	if total == 0 {
		return nil
	}
	if q.used+total > len(q.stage) {
		if err := q.Sync(ctx); err != nil {
			return err
		}
		if err := q.growStage(total); err != nil {
			return err
		}
	}
	copies := make([]copyPair, 0, len(ws))
	for _, w := range ws {
		if len(w.Src) == 0 {
			continue
		}
		d := w.Dst.(*buffer)
		copies = append(copies, copyPair{q.stage[q.used:], w.Src})
		q.pending = append(q.pending, staged{dst: d.ptr + driver.DevicePtr(w.Off), lo: q.used, hi: q.used + len(w.Src)})
		q.used += roundUp(len(w.Src))
	}
	copyStaged(copies...)
	return nil
}

// growStage makes the staging memory hold at least n bytes (the stream is
// idle).
func (q *queue) growStage(n int) error {
	if n <= len(q.stage) {
		return nil
	}
	size := max(2*len(q.stage), roundUp(n))
	return q.b.th.Do(func() error {
		if err := q.b.drv.MemFreeHost(q.stage); err != nil {
			return err
		}
		var err error
		q.stage, err = q.b.drv.MemAllocHost(size)
		return err
	})
}

// flush issues the staged writes (on the backend's thread).
func (q *queue) flush() error {
	for _, p := range q.pending {
		if err := q.b.drv.MemcpyHtoDAsync(p.dst, q.stage[p.lo:p.hi], q.stream); err != nil {
			return err
		}
	}
	q.pending = q.pending[:0]
	return nil
}

// Launch enqueues one step.
func (q *queue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := q.ensureScratch(scratchBytes(s, q.b)); err != nil {
		return err
	}
	return q.b.th.Do(func() error {
		if err := q.flush(); err != nil {
			return err
		}
		return q.launch(s, bufs)
	})
}

// ensureScratch grows the workspace to n bytes; only between runs, never
// while a stream is being captured.
func (q *queue) ensureScratch(n int) error {
	if n == 0 || q.scratch != nil && q.scratch.n >= n {
		return nil
	}
	if q.scratch != nil {
		// Work already enqueued may still read the old workspace.
		if err := q.Sync(context.Background()); err != nil {
			return err
		}
		q.b.Free(q.scratch)
	}
	s, err := q.b.Alloc(n)
	if err != nil {
		return fmt.Errorf("cuda: workspace of %d bytes: %w", n, err)
	}
	q.scratch = s.(*buffer)
	return nil
}

// Read waits for the queue's work and copies from src.
func (q *queue) Read(ctx context.Context, dst []byte, src kernels.Buffer, off int) error {
	s, err := devBuf(src)
	if err != nil {
		return err
	}
	if off < 0 || off+len(dst) > s.n {
		return fmt.Errorf("cuda: read of %d bytes at %d overflows a %d-byte buffer", len(dst), off, s.n)
	}
	if len(dst) > len(q.stage) {
		if err := q.Sync(ctx); err != nil {
			return err
		}
		if err := q.growStage(len(dst)); err != nil {
			return err
		}
	}
	if err := q.wait(func() error {
		if len(dst) == 0 {
			return nil
		}
		// Stream order puts this copy after the staged writes that read
		// the same pinned memory.
		return q.b.drv.MemcpyDtoHAsync(q.stage[:len(dst)], s.ptr+driver.DevicePtr(off), q.stream)
	}); err != nil {
		return err
	}
	copyStaged(copyPair{dst, q.stage})
	return nil
}

// stagedChunk is the least a goroutine of copyStaged copies: a window's
// 960 KB of features go on seven cores. On the H100's host, against 512
// KiB (one core), in three interleaved rounds: Whisper tiny's one-window
// f16 encode 663/669/653 → 645/654/642 µs, jfk in process 14.5/12.5/14.2
// → 12.0/12.0/11.1 ms.
const stagedChunk = 128 << 10

// copyPair is one copy of copyStaged: copy(dst, src).
type copyPair struct{ dst, src []byte }

// copyStaged makes the copies between Go memory and pinned staging memory,
// split between goroutines when they are large: one core's memmove took
// 0.7 ms for the 6.6 MB of logits of a 32-sequence decoder step on the
// H100's host, the longest part of the round after the GPU's work, and
// 4.6 ms for the 32 windows of features of a batched encoding.
func copyStaged(pairs ...copyPair) {
	total := 0
	for i, p := range pairs {
		n := min(len(p.dst), len(p.src))
		pairs[i] = copyPair{p.dst[:n], p.src[:n]}
		total += n
	}
	parts := min(runtime.GOMAXPROCS(0), total/stagedChunk)
	if parts < 2 {
		for _, p := range pairs {
			copy(p.dst, p.src)
		}
		return
	}
	// Each goroutine copies a run of about per bytes, cut across the
	// pairs' boundaries.
	per := (total + parts - 1) / parts
	var wg sync.WaitGroup
	var run []copyPair
	room := per
	start := func() {
		if len(run) == 0 {
			return
		}
		mine := run
		run, room = nil, per
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range mine {
				copy(p.dst, p.src)
			}
		}()
	}
	for _, p := range pairs {
		for lo := 0; lo < len(p.src); {
			k := min(len(p.src)-lo, room)
			run = append(run, copyPair{p.dst[lo : lo+k], p.src[lo : lo+k]})
			lo += k
			if room -= k; room == 0 {
				start()
			}
		}
	}
	start()
	wg.Wait()
}

// Sync waits for the queue's work.
func (q *queue) Sync(ctx context.Context) error {
	return q.wait(nil)
}

// wait issues staged writes, then more (if any), fetches the error word and
// waits for the stream; it reports a kernel's error once.
func (q *queue) wait(more func() error) error {
	var code int32
	err := q.b.th.Do(func() error {
		if err := q.flush(); err != nil {
			return err
		}
		if more != nil {
			if err := more(); err != nil {
				return err
			}
		}
		if err := q.b.drv.MemcpyDtoHAsync(q.errHost[:4], q.errDev, q.stream); err != nil {
			return err
		}
		if err := q.b.drv.StreamSynchronize(q.stream); err != nil {
			return err
		}
		code = int32(uint32(q.errHost[0]) | uint32(q.errHost[1])<<8 | uint32(q.errHost[2])<<16 | uint32(q.errHost[3])<<24)
		if code != 0 {
			if err := q.b.drv.MemsetD8Async(q.errDev, 0, 4, q.stream); err != nil {
				return err
			}
			return q.b.drv.StreamSynchronize(q.stream)
		}
		return nil
	})
	q.used = 0
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if code != 0 {
		return kernelError(code)
	}
	return nil
}

// kernelError names an error code set by kernels.cu.
func kernelError(code int32) error {
	switch code {
	case 1:
		return errors.New("cuda: gather: an index is out of range")
	case 2:
		return errors.New("cuda: slice_update: the update does not fit at its start position")
	case 3:
		return errors.New("cuda: repeat_interleave: counts are negative or do not sum to the output length")
	case 4:
		return errors.New("cuda: dynamic_quantize: an input value is not finite")
	}
	return fmt.Errorf("cuda: kernel error %d", code)
}

// Close waits for the queue and releases it.
func (q *queue) Close() error {
	if q.closed {
		return nil
	}
	q.closed = true
	err := q.Sync(context.Background())
	b := q.b
	if q.scratch != nil {
		b.Free(q.scratch)
	}
	if q.blasWS != nil {
		b.Free(q.blasWS)
	}
	return errors.Join(err, b.th.Do(func() error {
		return errors.Join(b.drv.StreamDestroy(q.stream), b.drv.MemFreeHost(q.stage), b.drv.MemFreeHost(q.errHost))
	}))
}
