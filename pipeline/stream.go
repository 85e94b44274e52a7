package pipeline

import (
	"context"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/tensorforge/forge/stage"
)

// Inlet is the streaming form of a source: the caller's goroutines push
// frames into the pipeline with Send and end the stream with Close.
type Inlet[T any] struct {
	p    *Pipeline
	n    *node
	port *Port[T]

	mu     sync.RWMutex // Send holds it shared, Close exclusively: no send on a closed channel
	closed bool
}

// Input adds an inlet called name and returns it with the port it feeds.
func Input[T any](p *Pipeline, name string) (*Inlet[T], *Port[T]) {
	n := p.addNode(name, stage.KindSource)
	pt := newPort[T](p, name)
	return &Inlet[T]{p: p, n: n, port: pt}, pt
}

// Send pushes f into the pipeline, stamping Entered with the current time
// if it is zero, and blocks while the first stage's queue is full
// (backpressure reaches the caller). It returns ctx's error if ctx ends
// first, the pipeline's error if it failed or was stopped, ErrClosed after
// Close, and ErrNotStarted before Start.
func (in *Inlet[T]) Send(ctx context.Context, f stage.Frame[T]) error {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if in.closed {
		return ErrClosed
	}
	if !in.p.live.Load() {
		return ErrNotStarted
	}
	now := time.Now()
	if f.Entered.IsZero() {
		f.Entered = now
	}
	select {
	case in.port.ch <- f:
	default:
		select {
		case in.port.ch <- f:
		case <-ctx.Done():
			return ctx.Err()
		case <-in.p.ctx.Done():
			if err := in.p.abortErr(); err != nil {
				return err
			}
			return ErrClosed
		}
	}
	in.n.m.Entered(f.Entered, now, time.Now())
	return nil
}

// Close ends the stream: the pipeline finishes once the frames already sent
// have passed through. It waits for Sends in progress and is idempotent.
func (in *Inlet[T]) Close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		if in.port.ch != nil {
			close(in.port.ch)
		}
	}
}

// Outlet is the streaming form of a sink: the caller pulls results with
// Recv (or ranges over All). It records end-to-end latency and the first
// output time as frames are pulled.
type Outlet[T any] struct {
	p  *Pipeline
	n  *node
	ch <-chan stage.Frame[T]

	mu   sync.Mutex // guards last
	last time.Time  // when the previous Recv returned
}

// Output adds an outlet called name fed by in.
func Output[T any](in *Port[T], name string, opts ...StageOption) *Outlet[T] {
	p := in.p
	c := p.config(opts)
	n := p.addNode(name, stage.KindSink)
	ch := connect(p, in, n, c.buffer)
	return &Outlet[T]{p: p, n: n, ch: ch}
}

// Recv returns the next result. At the end of a clean run it returns
// io.EOF; if the pipeline failed or was stopped, the pipeline's error; if
// ctx ends first, ctx's error. Results already queued are delivered before
// io.EOF, but not after a failure. Call Wait too: a branch of a DAG may fail
// after this outlet's input ended cleanly.
func (o *Outlet[T]) Recv(ctx context.Context) (stage.Frame[T], error) {
	var zero stage.Frame[T]
	if !o.p.live.Load() {
		return zero, ErrNotStarted
	}
	waitFrom := time.Now()
	depth := len(o.ch)
	select {
	case f, ok := <-o.ch:
		return o.got(f, ok, waitFrom, depth)
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-o.p.ctx.Done():
		if err := o.p.abortErr(); err != nil {
			return zero, err
		}
		// Finished cleanly: every stage has returned, so the input is
		// closed and what is left in it can be drained.
		f, ok := <-o.ch
		return o.got(f, ok, waitFrom, depth)
	}
}

func (o *Outlet[T]) got(f stage.Frame[T], ok bool, waitFrom time.Time, depth int) (stage.Frame[T], error) {
	if !ok {
		if err := o.p.abortErr(); err != nil {
			return f, err
		}
		return f, io.EOF
	}
	now := time.Now()
	o.mu.Lock()
	if !o.last.IsZero() && o.last.After(waitFrom) {
		waitFrom = o.last
	}
	o.last = now
	o.mu.Unlock()
	o.n.m.Received(waitFrom, now, depth)
	o.n.m.Consumed(f.Entered, now, now)
	return f, nil
}

// All returns an iterator over the remaining results. It stops after the
// last result of a clean run; on failure it yields the error once (with a
// zero frame) and stops.
func (o *Outlet[T]) All(ctx context.Context) iter.Seq2[stage.Frame[T], error] {
	return func(yield func(stage.Frame[T], error) bool) {
		for {
			f, err := o.Recv(ctx)
			if err == io.EOF {
				return
			}
			if !yield(f, err) || err != nil {
				return
			}
		}
	}
}
