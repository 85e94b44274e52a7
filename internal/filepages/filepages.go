// Package filepages lets code that keeps its own copy of part of a mapped
// weight file (a backend that packed a weight for its kernels) give that
// part's pages back to the kernel. Weight files are mapped read-only and
// shared (weights/internal/mmap), so a page dropped from the process is
// still in the page cache: touching it again reads the same bytes back,
// at the cost of a minor fault. Nothing is copied or changed; only the
// process's resident set shrinks. Kokoro's decoder and generator read
// some 200 MB of float32 convolution weights once, to pack them in
// bfloat16, and would otherwise keep every one of those pages resident
// beside the packs.
//
// The package holds a registry of the process's mappings (the one piece of
// package-level state, guarded by a mutex): Release acts only on memory
// inside a registered mapping, so a slice of the Go heap, which
// MADV_DONTNEED would zero, is never touched.
package filepages

import (
	"fmt"
	"sync"
	"unsafe"
)

// mapping is one registered read-only file mapping, [lo, hi), of the file
// that id names (see Add).
type mapping struct {
	lo, hi uintptr
	id     string
}

// registry holds the mappings Add recorded. The mutex is held across the
// madvise calls of Release, so that a mapping is never released after
// Remove returned (its owner unmaps it then).
var registry struct {
	sync.Mutex
	maps []mapping
}

// span returns the address range of b.
func span(b []byte) mapping {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return mapping{lo: p, hi: p + uintptr(len(b))}
}

// Add records b, the whole of a read-only, shared mapping of a file, as
// memory whose pages Release may drop. b must stay mapped until Remove.
// id names the file's contents as they were mapped (its path, size,
// modification time, inode: whatever changes when the file does), so that
// Lookup's callers can keep what they derive from the bytes (a backend's
// packed weights) under a name that outlives the process.
func Add(b []byte, id string) {
	if len(b) == 0 {
		return
	}
	m := span(b)
	m.id = id
	registry.Lock()
	registry.maps = append(registry.maps, m)
	registry.Unlock()
}

// Lookup reports the file that p lies in, as Add's id, and p's offset in
// it; ok is false for memory outside every registered mapping (or only
// partly inside one).
func Lookup(p []byte) (id string, off int64, ok bool) {
	if len(p) == 0 {
		return "", 0, false
	}
	s := span(p)
	registry.Lock()
	defer registry.Unlock()
	for _, m := range registry.maps {
		if s.lo >= m.lo && s.hi <= m.hi {
			return m.id, int64(s.lo - m.lo), true
		}
	}
	return "", 0, false
}

// Remove forgets the mapping b that Add recorded; its owner calls it
// before unmapping b.
func Remove(b []byte) {
	if len(b) == 0 {
		return
	}
	m := span(b)
	registry.Lock()
	defer registry.Unlock()
	for i, r := range registry.maps {
		if r.lo == m.lo && r.hi == m.hi {
			registry.maps = append(registry.maps[:i], registry.maps[i+1:]...)
			return
		}
	}
}

// Release drops from the process's resident set the whole pages that lie
// inside both p and a registered mapping, and returns how many bytes that
// was: 0 for memory outside every mapping (the Go heap, a folded
// constant), for a p smaller than a page, and on systems without
// madvise. The bytes of p are unchanged; reading them again faults the
// pages back in from the page cache. Pages p shares with its neighbours at
// either end are kept.
func Release(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	s := span(p)
	registry.Lock()
	defer registry.Unlock()
	n := 0
	for _, m := range registry.maps {
		lo, hi := max(s.lo, m.lo), min(s.hi, m.hi)
		lo = (lo + pageSize - 1) &^ (pageSize - 1)
		hi &^= pageSize - 1
		if hi <= lo {
			continue
		}
		if dontNeed(lo, hi-lo) {
			n += int(hi - lo)
		}
	}
	return n
}

// Resident returns how many bytes of the whole pages inside p the process
// has resident now, for tests and diagnostics of Release's callers (Linux
// only: elsewhere an error).
func Resident(p []byte) (int, error) {
	s := span(p)
	lo := (s.lo + pageSize - 1) &^ (pageSize - 1)
	hi := s.hi &^ (pageSize - 1)
	if hi <= lo {
		return 0, nil
	}
	n, err := resident(lo, hi)
	if err != nil {
		return 0, fmt.Errorf("filepages: %w", err)
	}
	return n * int(pageSize), nil
}
