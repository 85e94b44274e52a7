//go:build !amd64

package gemm

func amxReady() bool { return false }

func amxRows(a *uint16, b *uint32, off *int, steps, bstride int, c *float32, ldc, tpairs int) {
	panic("gemm: AMX on a non-amd64 CPU")
}

func pairBF16(dst []uint32, x0, x1 []float32) {
	for i := range dst {
		dst[i] = uint32(toBF16(x0[i])) | uint32(toBF16(x1[i]))<<16
	}
}

// pairsOf sets dst[p] = bf16(x[2p]) | bf16(x[2p+1])<<16 for the pairs of
// x, the odd last value paired with zero, and returns how many it set.
func pairsOf(dst []uint32, x []float32) int { return pairsOfGo(dst, x, 0) }
