package stage

import (
	"context"
	"sync"
	"time"
)

// Tee sends every frame from in to each of outs, in order, and returns when
// in is closed (nil) or ctx is cancelled (ctx's error). Payloads are shared,
// not copied: branches must treat them as read-only. The slowest branch sets
// the pace of all (backpressure reaches the source through the tee). Tee
// never closes outs.
func Tee[T any](ctx context.Context, in <-chan Frame[T], outs []chan<- Frame[T], m *Metrics) error {
	if m == nil {
		m = NewMetrics("tee", KindTee)
	}
	done := ctx.Done()
	waitFrom := time.Now()
	for {
		f, st := recv(done, in, m)
		if st != gotFrame {
			return ctx.Err()
		}
		began := time.Now()
		m.received(waitFrom, began)
		for _, out := range outs {
			t0 := time.Now()
			if !send(done, out, f) {
				return ctx.Err()
			}
			waitFrom = time.Now()
			m.sent(began, t0, waitFrom)
		}
	}
}

// Merge forwards frames from every input to out as they arrive (no order
// between inputs; each input's own order is kept) and returns when all
// inputs are closed (nil) or ctx is cancelled (ctx's error). It runs one
// goroutine per input and waits for all of them before returning. Merge
// never closes out.
func Merge[T any](ctx context.Context, ins []<-chan Frame[T], out chan<- Frame[T], m *Metrics) error {
	if m == nil {
		m = NewMetrics("merge", KindMerge)
	}
	done := ctx.Done()
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waitFrom := time.Now()
			for {
				f, st := recv(done, in, m)
				if st != gotFrame {
					return
				}
				began := time.Now()
				m.received(waitFrom, began)
				if !send(done, out, f) {
					return
				}
				waitFrom = time.Now()
				m.sent(began, began, waitFrom)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
