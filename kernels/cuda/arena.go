package cuda

import (
	"fmt"
	"slices"
	"sync"
)

// arena sub-allocates device memory from a few large slabs, so that the
// buffers of every program (the graph's planned arenas, inputs, outputs,
// states and weights) come from a handful of cuMemAlloc calls, and a freed
// buffer's range is reused by the next request that fits. It does the
// bookkeeping only: grow maps a new slab, which makes it testable without a
// GPU.
type arena struct {
	grow     func(bytes int) (base uint64, err error) // maps a new slab
	slabSize int                                      // the smallest slab mapped

	mu    sync.Mutex
	slabs []slab
	free  []extent // free ranges, sorted by address
	live  int      // bytes handed out
	peak  int
}

// slab is one mapped range of device memory.
type slab struct {
	base uint64
	size int
}

// extent is a range of device addresses.
type extent struct {
	addr uint64
	size int
}

// align is the alignment of every allocation: what cuMemAlloc guarantees,
// and enough for vectorised loads and cuBLASLt's operands.
const align = 256

func roundUp(n int) int { return (n + align - 1) / align * align }

// alloc returns the address of size bytes (rounded up to the alignment),
// best fit among the free ranges, mapping a new slab when none fits.
func (a *arena) alloc(size int) (uint64, int, error) {
	if size < 0 {
		return 0, 0, fmt.Errorf("cuda: allocation of %d bytes", size)
	}
	size = roundUp(max(size, 1))
	a.mu.Lock()
	defer a.mu.Unlock()
	best := -1
	for i, e := range a.free {
		if e.size >= size && (best < 0 || e.size < a.free[best].size) {
			best = i
		}
	}
	if best < 0 {
		n := max(a.slabSize, size)
		base, err := a.grow(n)
		if err != nil {
			return 0, 0, fmt.Errorf("cuda: mapping a %d-byte slab: %w", n, err)
		}
		a.slabs = append(a.slabs, slab{base, n})
		a.insert(extent{base, n})
		return a.take(size)
	}
	e := &a.free[best]
	addr := e.addr
	e.addr += uint64(size)
	e.size -= size
	if e.size == 0 {
		a.free = slices.Delete(a.free, best, best+1)
	}
	a.account(size)
	return addr, size, nil
}

// take allocates from the free list after a slab was added (the caller
// holds the lock).
func (a *arena) take(size int) (uint64, int, error) {
	for i := range a.free {
		e := &a.free[i]
		if e.size >= size {
			addr := e.addr
			e.addr += uint64(size)
			e.size -= size
			if e.size == 0 {
				a.free = slices.Delete(a.free, i, i+1)
			}
			a.account(size)
			return addr, size, nil
		}
	}
	return 0, 0, fmt.Errorf("cuda: internal: no room after mapping a slab")
}

func (a *arena) account(size int) {
	a.live += size
	a.peak = max(a.peak, a.live)
}

// release returns a range from alloc, merging it with free neighbours in
// the same slab.
func (a *arena) release(addr uint64, size int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live -= size
	a.insert(extent{addr, size})
}

// insert adds e to the sorted free list and merges it with neighbours that
// touch it inside one slab (slabs are separate mappings: never merged).
func (a *arena) insert(e extent) {
	i, _ := slices.BinarySearchFunc(a.free, e.addr, func(x extent, addr uint64) int {
		switch {
		case x.addr < addr:
			return -1
		case x.addr > addr:
			return 1
		}
		return 0
	})
	a.free = slices.Insert(a.free, i, e)
	if i+1 < len(a.free) && a.touch(a.free[i], a.free[i+1]) {
		a.free[i].size += a.free[i+1].size
		a.free = slices.Delete(a.free, i+1, i+2)
	}
	if i > 0 && a.touch(a.free[i-1], a.free[i]) {
		a.free[i-1].size += a.free[i].size
		a.free = slices.Delete(a.free, i, i+1)
	}
}

// touch reports whether x ends where y starts inside one slab.
func (a *arena) touch(x, y extent) bool {
	if x.addr+uint64(x.size) != y.addr {
		return false
	}
	for _, s := range a.slabs {
		if x.addr >= s.base && x.addr < s.base+uint64(s.size) {
			return y.addr < s.base+uint64(s.size)
		}
	}
	return false
}

// stats returns the live and peak bytes handed out.
func (a *arena) stats() (live, peak int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live, a.peak
}

// mapped returns the bytes of device memory the slabs hold.
func (a *arena) mapped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, s := range a.slabs {
		n += s.size
	}
	return n
}
