package stage

import (
	"context"
	"time"
)

// Stage is a goroutine body that turns a stream of In frames into a stream of
// Out frames. Build one with [Map], [MapFrame], [FlatMap], [Process],
// [Batch] or [Rechunk]; run it with [Stage.Run] or hand it to a pipeline.
type Stage[In, Out any] struct {
	name string
	kind Kind
	run  func(ctx context.Context, in <-chan Frame[In], out chan<- Frame[Out], m *Metrics) error
}

// Name returns the stage's name, used in errors and metrics.
func (s *Stage[In, Out]) Name() string { return s.name }

// Kind returns what shape of stage s is.
func (s *Stage[In, Out]) Kind() Kind { return s.kind }

// Run receives frames from in until it is closed, sends results to out and
// records into m (which may be nil). It returns nil after the last output
// has been sent, ctx's error if ctx was cancelled (also when in was closed
// after a cancellation, so that a failure upstream never looks like a clean
// end), or the first error of the stage's function, named by the stage. A
// panic in the function is returned as a [PanicError]. Run never closes out.
func (s *Stage[In, Out]) Run(ctx context.Context, in <-chan Frame[In], out chan<- Frame[Out], m *Metrics) (err error) {
	if m == nil {
		m = NewMetrics(s.name, s.kind)
	}
	defer guard(s.name, &err)
	return wrap(s.name, s.run(ctx, in, out, m))
}

// Map returns a 1→1 stage that applies fn to each payload. Output frames keep
// the timing of their input.
func Map[In, Out any](name string, fn func(context.Context, In) (Out, error)) *Stage[In, Out] {
	return &Stage[In, Out]{name: name, kind: KindMap, run: func(ctx context.Context, in <-chan Frame[In], out chan<- Frame[Out], m *Metrics) error {
		return mapLoop(ctx, in, out, m, func(ctx context.Context, f Frame[In]) (Frame[Out], error) {
			y, err := fn(ctx, f.Payload)
			return Frame[Out]{Offset: f.Offset, Rate: f.Rate, Entered: f.Entered, Payload: y}, err
		})
	}}
}

// MapFrame returns a 1→1 stage that applies fn to each whole frame, for
// functions that need or change the timing (resampling changes Rate and
// Offset).
func MapFrame[In, Out any](name string, fn func(context.Context, Frame[In]) (Frame[Out], error)) *Stage[In, Out] {
	return &Stage[In, Out]{name: name, kind: KindMap, run: func(ctx context.Context, in <-chan Frame[In], out chan<- Frame[Out], m *Metrics) error {
		return mapLoop(ctx, in, out, m, fn)
	}}
}

func mapLoop[In, Out any](ctx context.Context, in <-chan Frame[In], out chan<- Frame[Out], m *Metrics, fn func(context.Context, Frame[In]) (Frame[Out], error)) error {
	done := ctx.Done()
	last := now() // latest clock reading; fast paths reuse it
	for {
		f, st := recv(done, in, m)
		if st >= inputClosed {
			return ctx.Err()
		}
		began, waited := last, time.Duration(0)
		if st == gotBlocked {
			began = now()
			waited = (began - last)
		}
		m.took(began, waited)
		y, err := fn(ctx, f)
		worked := now()
		m.addBusy((worked - began))
		if err != nil {
			return err
		}
		last = worked
		var blocked time.Duration
		if !sendNow(out, y) {
			if !sendWait(done, out, y) {
				return ctx.Err()
			}
			last = now()
			blocked = (last - worked)
		}
		m.gave(began, last, blocked)
	}
}

// Emit hands one output frame downstream, blocking while the output queue is
// full. It returns an error only when the pipeline is being cancelled; the
// caller should then return that error. An Emit is valid only during the
// call it was passed to.
type Emit[T any] func(Frame[T]) error

// Processor is a stateful 1→N transform, such as a VAD that turns PCM chunks
// into speech segments. Process is called for each input frame in order and
// may emit any number of frames. If the Processor also implements
// [Flusher], Flush is called once after the last input so it can emit what
// it still holds.
type Processor[In, Out any] interface {
	Process(ctx context.Context, f Frame[In], emit Emit[Out]) error
}

// Flusher is implemented by processors that hold frames back (an open speech
// segment, a partial window) and must emit them when the input ends.
type Flusher[Out any] interface {
	Flush(ctx context.Context, emit Emit[Out]) error
}

// ProcessFunc adapts a function to [Processor].
type ProcessFunc[In, Out any] func(ctx context.Context, f Frame[In], emit Emit[Out]) error

// Process implements Processor.
func (fn ProcessFunc[In, Out]) Process(ctx context.Context, f Frame[In], emit Emit[Out]) error {
	return fn(ctx, f, emit)
}

// FlatMap returns a 1→N stage that calls fn for each frame; fn emits zero or
// more output frames (use [Derive] to keep the input's timing).
func FlatMap[In, Out any](name string, fn func(ctx context.Context, f Frame[In], emit Emit[Out]) error) *Stage[In, Out] {
	return Process[In, Out](name, ProcessFunc[In, Out](fn))
}

// Process returns a 1→N stage driven by p. The same p must not run in two
// stages at once.
func Process[In, Out any](name string, p Processor[In, Out]) *Stage[In, Out] {
	return &Stage[In, Out]{name: name, kind: KindFlatMap, run: func(ctx context.Context, in <-chan Frame[In], out chan<- Frame[Out], m *Metrics) error {
		e := &emitter[Out]{ctx: ctx, done: ctx.Done(), out: out, m: m}
		emit := Emit[Out](e.emit) // one allocation per run, none per frame
		last := now()
		for {
			f, st := recv(e.done, in, m)
			if st == cancelled {
				return ctx.Err()
			}
			if st == inputClosed {
				if err := ctx.Err(); err != nil {
					return err
				}
				fl, ok := p.(Flusher[Out])
				if !ok {
					return nil
				}
				e.start(now())
				err := fl.Flush(ctx, emit)
				m.addBusy((now() - e.began) - e.blocked)
				return err
			}
			began, waited := last, time.Duration(0)
			if st == gotBlocked {
				began = now()
				waited = (began - last)
			}
			m.took(began, waited)
			e.start(began)
			err := p.Process(ctx, f, emit)
			last = now()
			m.addBusy((last - began) - e.blocked)
			if err != nil {
				return err
			}
		}
	}}
}

// emitter sends a processor's outputs and accounts for the time it blocks.
type emitter[Out any] struct {
	ctx     context.Context
	done    <-chan struct{}
	out     chan<- Frame[Out]
	m       *Metrics
	began   tick          // arrival of the input being processed
	blocked time.Duration // time blocked sending during this input
}

func (e *emitter[Out]) start(t tick) { e.began, e.blocked = t, 0 }

func (e *emitter[Out]) emit(f Frame[Out]) error {
	if sendNow(e.out, f) {
		e.m.gave(e.began, now(), 0)
		return nil
	}
	t0 := now()
	if !sendWait(e.done, e.out, f) {
		return e.ctx.Err()
	}
	t1 := now()
	e.blocked += (t1 - t0)
	e.m.gave(e.began, t1, (t1 - t0))
	return nil
}
