//go:build !linux

package filepages

import "errors"

// pageSize is 4 KB; nothing is released on this system.
const pageSize = 4096

// dontNeed releases nothing where the page cache semantics of
// MADV_DONTNEED on a shared file mapping are not Linux's.
func dontNeed(addr, n uintptr) bool { return false }

// resident is not known on this system.
func resident(lo, hi uintptr) (int, error) {
	return 0, errors.New("filepages: resident pages are counted on Linux only")
}
