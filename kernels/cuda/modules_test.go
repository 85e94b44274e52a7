package cuda

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallel checks the compile fan-out: every job runs, no more than
// GOMAXPROCS at once, and every failure is reported.
func TestParallel(t *testing.T) {
	errA, errB := errors.New("a failed"), errors.New("b failed")
	cases := []struct {
		name  string
		jobs  int
		fails map[int]error
	}{
		{"none", 0, nil},
		{"all succeed", 40, nil},
		{"two fail", 40, map[int]error{3: errA, 17: errB}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ran, running, most atomic.Int64
			var jobs []func() error
			for i := range c.jobs {
				jobs = append(jobs, func() error {
					ran.Add(1)
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Millisecond)
					running.Add(-1)
					return c.fails[i]
				})
			}
			err := parallel(jobs)
			if int(ran.Load()) != c.jobs {
				t.Errorf("%d of %d jobs ran", ran.Load(), c.jobs)
			}
			if most.Load() > int64(runtime.GOMAXPROCS(0)) {
				t.Errorf("%d jobs at once, more than GOMAXPROCS %d", most.Load(), runtime.GOMAXPROCS(0))
			}
			for _, want := range c.fails {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not report %v", err, want)
				}
			}
			if len(c.fails) == 0 && err != nil {
				t.Errorf("error %v, want none", err)
			}
		})
	}
}
