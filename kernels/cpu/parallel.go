package cpu

import (
	"runtime"
	"sync"
)

// Kernels call split first and run their loop body directly when it says
// no: a closure handed to goroutines must live on the heap, and the small
// kernels of a streaming model (a VAD chunk, a decoder step) must not
// allocate. Only work worth spreading pays for a closure.

// split reports whether n items of at least grain each are worth running on
// several goroutines.
func (b *Backend) split(n, grain int) bool {
	return b.threads > 1 && n >= 2*max(grain, 1)
}

// parallelFor runs body over [0, n) split into at most b.threads contiguous
// ranges, each at least grain items long.
func (b *Backend) parallelFor(n, grain int, body func(lo, hi int)) {
	workers := min(b.threads, n/max(grain, 1))
	if workers <= 1 {
		if n > 0 {
			body(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := chunk; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			body(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	runtime.Gosched() // another P starts at once (see gemm's team.parallel)
	body(0, min(chunk, n))
	wg.Wait()
}
