package driver

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// ErrClosed is returned by a Thread's Do and DoAll after Close.
var ErrClosed = errors.New("driver: CUDA thread closed")

// Thread is one goroutine locked to an OS thread that has a device's
// primary context current; it runs the funcs submitted to it, one at a
// time, in submission order. The CUDA driver keeps the current context per
// OS thread, and a goroutine may move between OS threads at any call, so a
// backend routes every driver (and cuBLASLt) call through its Thread.
//
// A hop to the thread costs a hand-off between goroutines and a wake-up of
// the locked OS thread (microseconds), so submit work in batches where it
// can be: DoAll runs a batch in one hop, and a func may itself issue many
// driver calls. Funcs running on the thread may call Do and DoAll again:
// such calls run inline, at once, instead of deadlocking.
type Thread struct {
	w   *worker
	d   *Driver
	dev Device
	ctx Context
}

// NewThread starts a thread for the device with the given ordinal: it
// locks a new goroutine to its OS thread, retains the device's primary
// context and makes it current there. Close releases both.
func (d *Driver) NewThread(ordinal int) (*Thread, error) {
	t := &Thread{d: d}
	setup := func() error {
		dev, err := d.DeviceGet(ordinal)
		if err != nil {
			return fmt.Errorf("device %d: %w", ordinal, err)
		}
		ctx, err := d.PrimaryCtxRetain(dev)
		if err != nil {
			return fmt.Errorf("device %d: %w", ordinal, err)
		}
		if err := d.CtxSetCurrent(ctx); err != nil {
			return errors.Join(fmt.Errorf("device %d: %w", ordinal, err), d.PrimaryCtxRelease(dev))
		}
		t.dev, t.ctx = dev, ctx
		return nil
	}
	teardown := func() error {
		// Work still queued would run into a destroyed context once the
		// last retain of the primary context goes: wait for it first.
		return errors.Join(d.CtxSynchronize(), d.PrimaryCtxRelease(t.dev))
	}
	w, err := startWorker(setup, teardown)
	if err != nil {
		return nil, err
	}
	t.w = w
	return t, nil
}

// Driver returns the driver the thread calls.
func (t *Thread) Driver() *Driver { return t.d }

// Device returns the thread's device.
func (t *Thread) Device() Device { return t.dev }

// Context returns the primary context current on the thread.
func (t *Thread) Context() Context { return t.ctx }

// Do runs fn on the thread and returns its error, after the funcs
// submitted before it. A panic in fn is raised again in the caller.
func (t *Thread) Do(fn func() error) error { return t.w.do(fn, nil) }

// DoAll runs fns on the thread in order, in one hop, and stops at the
// first error, which it returns.
func (t *Thread) DoAll(fns ...func() error) error { return t.w.do(nil, fns) }

// Close waits for the submitted work and the device's queued work, releases
// the primary context and ends the thread. Later Do calls return
// ErrClosed; a second Close returns the first one's result.
func (t *Thread) Close() error { return t.w.close() }

// worker is the locked goroutine under a Thread, apart from CUDA so that
// its ordering, batching and shutdown are tested without a GPU.
type worker struct {
	jobs chan *job     // unbuffered: a sent job is one the loop has taken
	done chan struct{} // closed when the loop has stopped taking jobs
	tid  int           // the locked OS thread's id (where gettid works)

	closeOnce sync.Once
	closeErr  error
}

// job is one hop: a func, a batch, or the stop request.
type job struct {
	one   func() error
	many  []func() error
	stop  bool
	err   error
	panic any // non-nil when the func panicked: what to raise in the caller
	reply chan struct{}
}

// jobPool recycles jobs with their reply channels: a hop allocates nothing.
var jobPool = sync.Pool{New: func() any { return &job{reply: make(chan struct{}, 1)} }}

// startWorker starts the locked goroutine and runs setup on it; an error
// from setup ends the goroutine and is returned.
func startWorker(setup, teardown func() error) (*worker, error) {
	w := &worker{jobs: make(chan *job), done: make(chan struct{})}
	started := make(chan error, 1)
	go w.loop(setup, teardown, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return w, nil
}

func (w *worker) loop(setup, teardown func() error, started chan<- error) {
	// Never unlocked: when the goroutine returns, its OS thread exits with
	// it rather than going back to the scheduler with a context current.
	runtime.LockOSThread()
	w.tid, _ = gettid()
	if err := setup(); err != nil {
		close(w.done)
		started <- err
		return
	}
	started <- nil
	for j := range w.jobs {
		if j.stop {
			j.err = teardown()
			close(w.done)
			j.reply <- struct{}{}
			return
		}
		j.run()
		j.reply <- struct{}{}
	}
}

// run runs the job's funcs, turning a panic into j.panic.
func (j *job) run() {
	defer func() {
		if r := recover(); r != nil {
			j.panic = fmt.Sprintf("%v\n\n[panicked on the CUDA thread:]\n%s", r, debug.Stack())
		}
	}()
	j.err = runFuncs(j.one, j.many)
}

// runFuncs runs one, or else many in order up to the first error.
func runFuncs(one func() error, many []func() error) error {
	if one != nil {
		return one()
	}
	for _, f := range many {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// onThread reports whether the caller is the worker's own goroutine: only
// it runs on the locked OS thread.
func (w *worker) onThread() bool {
	tid, ok := gettid()
	return ok && tid == w.tid
}

func (w *worker) do(one func() error, many []func() error) error {
	if w.onThread() {
		return runFuncs(one, many)
	}
	j := jobPool.Get().(*job)
	j.one, j.many = one, many
	select {
	case w.jobs <- j:
	case <-w.done:
		j.one, j.many = nil, nil
		jobPool.Put(j)
		return ErrClosed
	}
	<-j.reply
	err, p := j.err, j.panic
	*j = job{reply: j.reply}
	jobPool.Put(j)
	if p != nil {
		panic(p)
	}
	return err
}

func (w *worker) close() error {
	if w.onThread() {
		return errors.New("driver: Close called from a func running on the CUDA thread")
	}
	w.closeOnce.Do(func() {
		j := &job{stop: true, reply: make(chan struct{}, 1)}
		select {
		case w.jobs <- j:
			<-j.reply
			w.closeErr = j.err
		case <-w.done: // setup failed: nothing to tear down
		}
	})
	return w.closeErr
}
