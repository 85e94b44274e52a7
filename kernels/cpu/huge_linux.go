package cpu

import (
	"syscall"
	"unsafe"
)

// hugePageMin is the smallest buffer worth backing with transparent huge
// pages.
const hugePageMin = 4 << 20

// adviseHuge asks Linux to back the 2 MB-aligned interior of b with
// transparent huge pages (THP "madvise" mode, Debian's default). The
// generator's convolutions read and write rows far apart in tensors of
// tens of megabytes: with 4 KB pages every row is a TLB miss and the
// hardware prefetcher stops at each page boundary (measured: 10–15% on
// BenchmarkConv1d). Only a hint: failure changes nothing.
func adviseHuge(b []byte) {
	const huge = 2 << 20
	if len(b) < hugePageMin {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + huge - 1) &^ (huge - 1)
	hi := (p + uintptr(len(b))) &^ (huge - 1)
	if hi <= lo {
		return
	}
	start := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), lo-p)
	_ = syscall.Madvise(unsafe.Slice((*byte)(start), hi-lo), 14) // MADV_HUGEPAGE
}
