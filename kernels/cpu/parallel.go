package cpu

import "sync"

// parallelFor runs body over [0, n) split into at most b.threads contiguous
// ranges, each at least grain items long; small work stays on the calling
// goroutine.
func (b *Backend) parallelFor(n, grain int, body func(lo, hi int)) {
	workers := b.threads
	if grain < 1 {
		grain = 1
	}
	if w := n / grain; w < workers {
		workers = w
	}
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
	body(0, min(chunk, n))
	wg.Wait()
}
