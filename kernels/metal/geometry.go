package metal

import "fmt"

// groupSize is the threadgroup size to dispatch l with on a pipeline that
// runs at most maxThreads threads per group. Kernels that loop over their
// work with a grid-stride loop (dispatchThreads) run with any size, so the
// launch's size is lowered to the pipeline's limit; kernels whose
// threadgroup trees and arrays are sized for their group (hand-written
// kernels, block reductions) need exactly theirs, and a pipeline that
// cannot run it is an error.
func groupSize(l *launch, maxThreads int) (int, error) {
	if maxThreads <= 0 {
		return 0, fmt.Errorf("pipeline of %s runs no threads", l.fn)
	}
	if l.threads > 0 {
		return max(1, min(l.group, maxThreads, l.threads)), nil
	}
	if l.group > maxThreads {
		return 0, fmt.Errorf("kernel %s needs threadgroups of %d threads, its pipeline runs at most %d", l.fn, l.group, maxThreads)
	}
	return l.group, nil
}
