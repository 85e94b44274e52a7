package stage

import (
	"context"
	"time"
)

// Sink is the goroutine at the end of a pipeline: it consumes frames and
// records end-to-end latency (from each frame's Entered stamp to the moment
// the sink is done with it) and the time of the first output, from which
// time-to-first-audio is computed.
type Sink[T any] struct {
	name    string
	consume func(ctx context.Context, f Frame[T]) error
}

// ToFunc returns a sink that calls fn for each frame in order.
func ToFunc[T any](name string, fn func(ctx context.Context, f Frame[T]) error) *Sink[T] {
	return &Sink[T]{name: name, consume: fn}
}

// Discard returns a sink that drops every frame (it still records latency).
func Discard[T any](name string) *Sink[T] {
	return ToFunc(name, func(context.Context, Frame[T]) error { return nil })
}

// Collect returns a sink that appends each payload to *dst. Read *dst only
// after the pipeline has finished.
func Collect[T any](name string, dst *[]T) *Sink[T] {
	return ToFunc(name, func(_ context.Context, f Frame[T]) error {
		*dst = append(*dst, f.Payload)
		return nil
	})
}

// Name returns the sink's name.
func (s *Sink[T]) Name() string { return s.name }

// Run consumes frames from in until it is closed (nil), ctx is cancelled
// (ctx's error) or the sink's function fails (its error, named by the sink).
func (s *Sink[T]) Run(ctx context.Context, in <-chan Frame[T], m *Metrics) (err error) {
	if m == nil {
		m = NewMetrics(s.name, KindSink)
	}
	defer guard(s.name, &err)
	done := ctx.Done()
	last := now()
	for {
		f, st := recv(done, in, m)
		if st >= inputClosed {
			return wrap(s.name, ctx.Err())
		}
		began, waited := last, time.Duration(0)
		if st == gotBlocked {
			began = now()
			waited = (began - last)
		}
		m.took(began, waited)
		if err := s.consume(ctx, f); err != nil {
			return wrap(s.name, err)
		}
		last = now()
		m.consumed(f.Entered, began, last)
	}
}

// consumed records that a sink finished with a frame at t, having received
// it at began.
func (m *Metrics) consumed(entered time.Time, began, t tick) {
	m.addBusy(t - began)
	m.framesOut.Add(1)
	m.latency.Record(t - began)
	if !entered.IsZero() {
		m.endToEnd.Record(t - tickOf(entered))
	}
	m.markOnce(&m.firstOut, t)
}

// Consumed records that a consumer outside a stage (a pipeline outlet)
// finished with a frame at now, having received it at began; entered is the
// frame's Entered stamp.
func (m *Metrics) Consumed(entered, began, now time.Time) {
	m.consumed(entered, tickOf(began), tickOf(now))
}

// Received records that a consumer outside a stage (a pipeline outlet) took
// a frame from its queue at now after waiting since waitFrom, with depth
// frames queued before it was taken.
func (m *Metrics) Received(waitFrom, now time.Time, depth int) {
	m.observeQueue(depth)
	m.took(tickOf(now), now.Sub(waitFrom))
}

// Entered records a frame pushed into a pipeline from outside (a pipeline
// inlet): when it entered, and that it was handed on at now after blocking
// since blockFrom.
func (m *Metrics) Entered(entered, blockFrom, now time.Time) {
	m.markOnce(&m.firstIn, tickOf(entered))
	m.waitOut.Add(int64(now.Sub(blockFrom)))
	m.framesOut.Add(1)
	m.markOnce(&m.firstOut, tickOf(now))
}
