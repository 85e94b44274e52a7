package cuda

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// profiler times every step on the device with events around it, when
// FORGE_CUDA_PROFILE is set: plans then run step by step (no CUDA graphs)
// and each run waits for the device, so it is for finding where time goes,
// not for measuring totals.
type profiler struct {
	mu     sync.Mutex
	events []driver.Event
	byKey  map[string]*profEntry
}

type profEntry struct {
	count int
	ms    float64
}

// run launches n items with events around each and adds their device
// times, under the names key gives them (on the backend's thread).
func (pr *profiler) run(b *Backend, q *queue, n int, key func(i int) string, launch func(i int) error) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for len(pr.events) < 2*n {
		e, err := b.drv.EventCreate(driver.EventDefault)
		if err != nil {
			return err
		}
		pr.events = append(pr.events, e)
	}
	for i := 0; i < n; i++ {
		if err := b.drv.EventRecord(pr.events[2*i], q.stream); err != nil {
			return err
		}
		if err := launch(i); err != nil {
			return err
		}
		if err := b.drv.EventRecord(pr.events[2*i+1], q.stream); err != nil {
			return err
		}
	}
	if err := b.drv.StreamSynchronize(q.stream); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		ms, err := b.drv.EventElapsedTime(pr.events[2*i], pr.events[2*i+1])
		if err != nil {
			return err
		}
		k := key(i)
		e := pr.byKey[k]
		if e == nil {
			e = &profEntry{}
			pr.byKey[k] = e
		}
		e.count++
		e.ms += float64(ms)
	}
	return nil
}

// Profile returns the device time per kind of step since the backend was
// opened, largest first (empty unless FORGE_CUDA_PROFILE was set).
func (b *Backend) Profile() string {
	pr := b.prof
	if pr == nil {
		return ""
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	keys := make([]string, 0, len(pr.byKey))
	total := 0.0
	for k, e := range pr.byKey {
		keys = append(keys, k)
		total += e.ms
	}
	slices.SortFunc(keys, func(a, c string) int {
		switch {
		case pr.byKey[a].ms > pr.byKey[c].ms:
			return -1
		case pr.byKey[a].ms < pr.byKey[c].ms:
			return 1
		}
		return strings.Compare(a, c)
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "device time %.3f ms in %d kinds of step\n", total, len(keys))
	for i, k := range keys {
		if i == 30 {
			break
		}
		e := pr.byKey[k]
		fmt.Fprintf(&sb, "%9.3f ms %6d× %8.1f µs  %s\n", e.ms, e.count, 1000*e.ms/float64(e.count), k)
	}
	return sb.String()
}

// ResetProfile forgets the step times gathered so far (after a warm-up).
func (b *Backend) ResetProfile() {
	if pr := b.prof; pr != nil {
		pr.mu.Lock()
		pr.byKey = map[string]*profEntry{}
		pr.mu.Unlock()
	}
}
