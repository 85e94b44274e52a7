//go:build !linux

package filepages

// pageSize is 4 KB; nothing is released on this system.
const pageSize = 4096

// dontNeed releases nothing where the page cache semantics of
// MADV_DONTNEED on a shared file mapping are not Linux's.
func dontNeed(addr, n uintptr) bool { return false }
