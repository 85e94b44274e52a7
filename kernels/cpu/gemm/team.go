package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// team runs the tasks of one parallel phase on short-lived goroutines, the
// calling goroutine included. Tasks are handed out through an atomic counter
// (dynamic scheduling, so a worker slowed by another process on the machine
// does not hold the others back), and each goroutine gets a distinct slot
// number for its private scratch. A team is embedded in a pooled job, and the
// goroutine entry point is bound once, so running a phase allocates nothing.
type team struct {
	do    func(task, slot int) // bound to the owning job once
	run   func()               // t.work, bound once
	wg    sync.WaitGroup
	next  atomic.Int64
	slot  atomic.Int32
	tasks int
}

func (t *team) init(do func(task, slot int)) {
	t.do = do
	t.run = t.work
}

// parallel runs tasks [0, tasks) on up to workers goroutines and returns when
// all are done. Writes made before the call are visible to the tasks, and
// the tasks' writes are visible after it returns.
func (t *team) parallel(tasks, workers int) {
	t.tasks = tasks
	t.next.Store(0)
	t.slot.Store(0)
	w := min(workers, tasks)
	if w > 1 {
		t.wg.Add(w - 1)
		for i := 1; i < w; i++ {
			go t.run()
		}
		// Give the new goroutine this P and go to the global queue: another
		// P takes a goroutine from there at once, but steals one from a
		// running P's next slot, where go put it, only after a pause (the
		// runtime's usleep(3), some 80–100 µs with Linux's timer slack; a
		// phase's second worker started that late on the 2-core EPYC).
		runtime.Gosched()
	}
	t.loop(int(t.slot.Add(1) - 1))
	t.wg.Wait()
}

func (t *team) work() {
	t.loop(int(t.slot.Add(1) - 1))
	t.wg.Done()
}

func (t *team) loop(slot int) {
	for {
		task := int(t.next.Add(1) - 1)
		if task >= t.tasks {
			return
		}
		t.do(task, slot)
	}
}
