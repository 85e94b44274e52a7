package filepages

import (
	"syscall"
)

// pageSize is the unit Release drops; a larger page size (arm64 kernels
// with 16 or 64 KB pages) only makes Release keep more.
var pageSize = uintptr(syscall.Getpagesize())

// dontNeed advises the kernel that [addr, addr+n) is not needed
// (MADV_DONTNEED): for a shared file mapping, the pages leave the
// process's resident set and stay in the page cache.
func dontNeed(addr, n uintptr) bool {
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, n, syscall.MADV_DONTNEED)
	return e == 0
}
