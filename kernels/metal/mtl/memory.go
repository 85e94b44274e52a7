package mtl

// OffsetAlign is the alignment Forge's kernels need of a buffer binding's
// offset: the largest element they load (8 bytes: long, or two floats).
// Metal requires a device buffer's offset to be aligned to the data type
// the function reads.
const OffsetAlign = 8

// NoCopyRange decides how host bytes [addr, addr+n) become a Metal buffer
// without a copy. newBufferWithBytesNoCopy needs a page-aligned pointer
// and a length that is a whole number of pages; every page that holds a
// byte of the range is mapped (memory is mapped in whole pages), so the
// enclosing pages [base, base+length) can always be wrapped, and the
// bytes are then bound at offset within that buffer. ok is false (copy
// instead) when the range is empty, its start is not aligned for the
// kernels (OffsetAlign), page is not a power of two, or the enclosing
// pages exceed maxLength.
func NoCopyRange(addr uintptr, n, page, maxLength int) (base uintptr, length, offset int, ok bool) {
	if n <= 0 || page <= 0 || page&(page-1) != 0 || addr%OffsetAlign != 0 {
		return 0, 0, 0, false
	}
	mask := uintptr(page - 1)
	base = addr &^ mask
	end := (addr + uintptr(n) + mask) &^ mask
	if end < addr { // wrapped around the address space
		return 0, 0, 0, false
	}
	length = int(end - base)
	if maxLength > 0 && length > maxLength {
		return 0, 0, 0, false
	}
	return base, length, int(addr - base), true
}

// AllocLength is the length asked of newBufferWithLength for n bytes:
// Metal refuses zero-length buffers, so an empty buffer gets one word.
func AllocLength(n int) int {
	if n <= 0 {
		return OffsetAlign
	}
	return n
}
