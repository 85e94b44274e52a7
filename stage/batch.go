package stage

import (
	"context"
	"time"
)

// Batch returns an N→1 stage that gathers payloads into slices of at most
// size (size ≤ 0: no size bound) and sends a batch early once its first
// frame has waited maxWait (maxWait ≤ 0: no time bound). At the end of input
// the partial batch is sent. With neither bound the whole stream becomes one
// batch.
//
// A batch frame carries the Offset, Rate and Entered of its first frame, so
// latency counts the time a frame waited for its batch. Each batch is a new
// slice (one allocation per batch, none per frame) that the receiver owns.
func Batch[T any](name string, size int, maxWait time.Duration) *Stage[T, []T] {
	return &Stage[T, []T]{name: name, kind: KindBatch, run: func(ctx context.Context, in <-chan Frame[T], out chan<- Frame[[]T], m *Metrics) error {
		done := ctx.Done()
		var timer *time.Timer
		var timeout <-chan time.Time // nil (never fires) unless a batch is open with a time bound
		if maxWait > 0 {
			timer = time.NewTimer(maxWait)
			timer.Stop()
			defer timer.Stop()
		}
		capHint := size
		if capHint <= 0 {
			capHint = 16
		}
		var (
			batch    []T
			head     Frame[T] // timing of the batch's first frame
			began    tick
			waitFrom = now()
		)
		flush := func() bool {
			if len(batch) == 0 {
				return true
			}
			if timer != nil {
				timer.Stop()
				timeout = nil
			}
			t0 := now()
			ok := send(done, out, Frame[[]T]{Offset: head.Offset, Rate: head.Rate, Entered: head.Entered, Payload: batch})
			if ok {
				waitFrom = now()
				m.gave(began, waitFrom, (waitFrom - t0))
			}
			batch = nil
			return ok
		}
		for {
			select {
			case <-done:
				return ctx.Err()
			default:
			}
			m.observeQueue(len(in))
			select {
			case f, ok := <-in:
				if !ok {
					if err := ctx.Err(); err != nil {
						return err
					}
					if !flush() {
						return ctx.Err()
					}
					return nil
				}
				t := now()
				m.took(t, t-waitFrom)
				if batch == nil {
					batch = make([]T, 0, capHint)
					head, began = f, t
					if timer != nil {
						timer.Reset(maxWait)
						timeout = timer.C
					}
				}
				batch = append(batch, f.Payload)
				m.addBusy(now() - t)
				if size > 0 && len(batch) >= size && !flush() {
					return ctx.Err()
				}
			case <-timeout:
				timeout = nil
				if !flush() {
					return ctx.Err()
				}
			case <-done:
				return ctx.Err()
			}
		}
	}}
}

// Rechunk returns a stage that cuts a contiguous stream of sample slices
// into slices of exactly n samples (the last may be shorter), as a VAD or a
// mel frontend wants regardless of how the source chunked its reads. Output
// offsets count samples from the stream's first offset; each output carries
// the Entered time of the earliest input it contains. Where an input already
// holds whole chunks they are passed on without copying (capacity-limited
// sub-slices); partial chunks are copied into a new slice per chunk.
func Rechunk[E any](name string, n int) *Stage[[]E, []E] {
	if n < 1 {
		n = 1
	}
	return Process[[]E, []E](name, &rechunker[E]{n: n})
}

type rechunker[E any] struct {
	n       int
	buf     []E
	head    Frame[[]E] // timing of the first input in buf
	headPos int64      // offset of buf[0]
}

func (r *rechunker[E]) Process(ctx context.Context, f Frame[[]E], emit Emit[[]E]) error {
	p := f.Payload
	pos := f.Offset
	for len(p) > 0 {
		if len(r.buf) == 0 && len(p) >= r.n {
			chunk := p[:r.n:r.n]
			if err := emit(Frame[[]E]{Offset: pos, Rate: f.Rate, Entered: f.Entered, Payload: chunk}); err != nil {
				return err
			}
			p, pos = p[r.n:], pos+int64(r.n)
			continue
		}
		if len(r.buf) == 0 {
			r.buf = make([]E, 0, r.n)
			r.head, r.headPos = f, pos
		}
		take := min(r.n-len(r.buf), len(p))
		r.buf = append(r.buf, p[:take]...)
		p, pos = p[take:], pos+int64(take)
		if len(r.buf) == r.n {
			if err := r.flush(emit); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *rechunker[E]) Flush(_ context.Context, emit Emit[[]E]) error {
	if len(r.buf) == 0 {
		return nil
	}
	return r.flush(emit)
}

func (r *rechunker[E]) flush(emit Emit[[]E]) error {
	out := Frame[[]E]{Offset: r.headPos, Rate: r.head.Rate, Entered: r.head.Entered, Payload: r.buf}
	r.buf = nil
	return emit(out)
}
