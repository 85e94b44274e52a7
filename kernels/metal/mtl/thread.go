package mtl

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
)

// ErrClosed is returned by Thread.Do after Close.
var ErrClosed = errors.New("metal: thread closed")

// Thread is one goroutine locked to an OS thread that runs every Metal
// call of a backend, each batch inside an autorelease pool of its own.
// Objective-C objects that Metal returns autoreleased (command buffers,
// encoders, strings, errors) are freed when the pool that was current at
// their creation is drained; a Go program has no pool unless it makes one,
// and a pool belongs to the OS thread that pushed it, so the backend
// pushes and pops one around every batch on its own locked thread, and
// retains what must outlive a batch.
type Thread struct {
	jobs chan *threadJob
	done chan struct{}
}

type threadJob struct {
	fn    func() error
	err   error
	panic any
	reply chan struct{}
}

// poolHooks push and pop an autorelease pool around each batch; the
// darwin bridge sets them to objc_autoreleasePoolPush/Pop, tests to
// counters.
type poolHooks struct {
	push func() uintptr
	pop  func(uintptr)
}

// newThread starts the locked goroutine.
func newThread(h poolHooks) *Thread {
	t := &Thread{jobs: make(chan *threadJob), done: make(chan struct{})}
	go t.loop(h)
	return t
}

func (t *Thread) loop(h poolHooks) {
	// Never unlocked: the OS thread ends with the goroutine, so a pool
	// left by a bug cannot leak to other goroutines.
	runtime.LockOSThread()
	defer close(t.done)
	for j := range t.jobs {
		if j.fn == nil { // Close
			j.reply <- struct{}{}
			return
		}
		pool := h.push()
		func() {
			defer func() {
				if r := recover(); r != nil {
					j.panic = fmt.Sprintf("%v\n\n[panicked on the Metal thread:]\n%s", r, debug.Stack())
				}
			}()
			j.err = j.fn()
		}()
		h.pop(pool)
		j.reply <- struct{}{}
	}
}

// Do runs fn on the thread inside an autorelease pool and returns its
// error; a panic in fn is raised again in the caller. fn must not call Do.
func (t *Thread) Do(fn func() error) error {
	j := &threadJob{fn: fn, reply: make(chan struct{}, 1)}
	select {
	case t.jobs <- j:
	case <-t.done:
		return ErrClosed
	}
	<-j.reply
	if j.panic != nil {
		panic(j.panic)
	}
	return j.err
}

// Close ends the thread after the batches submitted before it; later Do
// calls return ErrClosed.
func (t *Thread) Close() {
	j := &threadJob{reply: make(chan struct{}, 1)}
	select {
	case t.jobs <- j:
		<-j.reply
	case <-t.done:
	}
	<-t.done
}
