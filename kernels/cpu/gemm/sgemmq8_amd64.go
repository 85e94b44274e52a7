package gemm

import "golang.org/x/sys/cpu"

// transposeQ8 is transpose16 (kernel_amd64.go) for rows of bytes: row p of
// dst (at dst + p·dstStride) gets column p of the first rows rows of src
// (row r at src + r·srcStride bytes, uint8 or int8 when signed), each
// value (q − zq)·scale, zero for rows ≥ rows; only the lanes set in mask
// are stored. 16 bytes of every loaded row are read.
//
//go:noescape
func transposeQ8(dst *float32, dstStride int, src *byte, srcStride int, rows int, mask uint16, signed bool, zq, scale float32)

// packQ8Fast packs whole blocks of 16 along the depth of a sliver of b with
// the AVX-512 transpose (see packSliver) and returns how much of the depth
// it packed. Widths that are neither ≤ 16 nor a multiple of 16 are left to
// the caller.
func packQ8Fast(dst []float32, nr, cols, depth int, b *quantB, c0, pc int) int {
	if !cpu.X86.HasAVX512F || !(nr <= 16 || nr%16 == 0) {
		return 0
	}
	mask := uint16(0xFFFF)
	if nr < 16 {
		mask = 1<<nr - 1
	}
	pb := 0
	for ; pb+16 <= depth; pb += 16 {
		for g := 0; g*16 < nr; g++ {
			n := max(0, min(16, cols-16*g))
			src := &b.q[0] // not read when n == 0
			if n > 0 {
				src = &b.q[(c0+16*g)*b.ldq+pc+pb]
			}
			transposeQ8(&dst[pb*nr+16*g], nr, src, b.ldq, n, mask, b.signed, b.zq, b.scale)
		}
	}
	return pb
}
