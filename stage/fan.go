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
	last := now()
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
		last = began
		for _, out := range outs {
			var blocked time.Duration
			if !sendNow(out, f) {
				t0 := now()
				if !sendWait(done, out, f) {
					return ctx.Err()
				}
				last = now()
				blocked = (last - t0)
			}
			m.gave(began, last, blocked)
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
			last := now()
			for {
				f, st := recv(done, in, m)
				if st >= inputClosed {
					return
				}
				began, waited := last, time.Duration(0)
				if st == gotBlocked {
					began = now()
					waited = (began - last)
				}
				m.took(began, waited)
				last = began
				var blocked time.Duration
				if !sendNow(out, f) {
					if !sendWait(done, out, f) {
						return
					}
					last = now()
					blocked = (last - began)
				}
				m.gave(began, last, blocked)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
