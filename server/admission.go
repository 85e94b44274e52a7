package server

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// errBusy: a model's work slots and queue are full.
var errBusy = errors.New("server busy")

// limiter is one model's admission control: at most `slots` calls run at
// once and at most `queue` more wait for a slot; anything beyond is
// refused at once, so a burst never grows memory without bound. It also
// estimates how long a refused client should wait before retrying.
type limiter struct {
	slots chan struct{}
	queue int

	mu      sync.Mutex
	waiting int
	avg     time.Duration // moving average of how long a slot is held
	// onChange reports the waiting and running counts (metrics).
	onChange func(waiting, running int)
}

func newLimiter(slots, queue int, onChange func(waiting, running int)) *limiter {
	if slots < 1 {
		slots = 1
	}
	if queue < 0 {
		queue = 0
	}
	if onChange == nil {
		onChange = func(int, int) {}
	}
	return &limiter{slots: make(chan struct{}, slots), queue: queue, onChange: onChange}
}

// acquire takes a slot, waiting in the queue while there is room in it.
// It returns errBusy when the queue is full and ctx's error when ctx ends
// first. The release function must be called exactly once.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
		return l.taken(), nil
	default:
	}
	l.mu.Lock()
	if l.waiting >= l.queue {
		l.mu.Unlock()
		return nil, errBusy
	}
	l.waiting++
	l.report()
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.waiting--
		l.report()
		l.mu.Unlock()
	}()
	select {
	case l.slots <- struct{}{}:
		return l.taken(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// taken returns the release of a slot just taken; it records how long the
// slot was held for retryAfter.
func (l *limiter) taken() func() {
	start := time.Now()
	l.mu.Lock()
	l.report()
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			held := time.Since(start)
			<-l.slots
			l.mu.Lock()
			if l.avg == 0 {
				l.avg = held
			} else {
				l.avg += (held - l.avg) / 8
			}
			l.report()
			l.mu.Unlock()
		})
	}
}

// report calls onChange with the current counts; l.mu is held.
func (l *limiter) report() { l.onChange(l.waiting, len(l.slots)) }

// retryAfter is the Retry-After a refused client gets, in whole seconds
// (at least 1): the time the queue ahead of it needs at the average pace.
func (l *limiter) retryAfter() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ahead := float64(l.waiting+cap(l.slots)) / float64(cap(l.slots))
	s := int(math.Ceil(ahead * l.avg.Seconds()))
	return max(1, min(s, 120))
}
