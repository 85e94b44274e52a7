package filepages

import (
	"os"
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

// resident counts the pages of [lo, hi) (page-aligned) that the process
// maps now, from /proc/self/pagemap (bit 63 of each page's entry).
func resident(lo, hi uintptr) (int, error) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 8*((hi-lo)/pageSize))
	if _, err := f.ReadAt(buf, int64(lo/pageSize*8)); err != nil {
		return 0, err
	}
	n := 0
	for i := 7; i < len(buf); i += 8 {
		n += int(buf[i] >> 7)
	}
	return n, nil
}
