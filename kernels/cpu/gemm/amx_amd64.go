package gemm

import (
	"sync"

	"golang.org/x/sys/cpu"
)

//go:noescape
func amxConvRows(cfg *byte, a *uint16, b *uint32, off *int, steps, bstride int, c *float32, ldc, tpairs int)

//go:noescape
func bf16Pairs(dst *uint32, x0, x1 *float32, n int)

//go:noescape
func bf16Adjacent(dst *uint32, x *float32, n int)

// amxReady reports whether this process may run AMX-BF16: the CPU has it
// and the OS granted the tile state (Linux's ARCH_REQ_XCOMP_PERM).
var amxReady = sync.OnceValue(func() bool {
	return cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && cpu.X86.HasAVX512F && requestAMX()
})

// amxConfig is the tile configuration amxConvRows loads: palette 1, all
// eight tiles 16 rows of 64 bytes.
var amxConfig = func() *[64]byte {
	var c [64]byte
	c[0] = 1
	for t := 0; t < 8; t++ {
		c[16+2*t] = 64 // colsb, little-endian uint16
		c[48+t] = 16   // rows
	}
	return &c
}()

func amxRows(a *uint16, b *uint32, off *int, steps, bstride int, c *float32, ldc, tpairs int) {
	amxConvRows(&amxConfig[0], a, b, off, steps, bstride, c, ldc, tpairs)
}

// pairBF16 sets dst[i] = bf16(x0[i]) | bf16(x1[i])<<16 for i < len(dst).
// bf16Pairs is AVX-512: without it (an AVX2 CPU) every pair is scalar.
func pairBF16(dst []uint32, x0, x1 []float32) {
	n := 0
	if cpu.X86.HasAVX512F {
		n = len(dst) &^ 15
		if n > 0 {
			bf16Pairs(&dst[0], &x0[0], &x1[0], n)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = uint32(toBF16(x0[i])) | uint32(toBF16(x1[i]))<<16
	}
}

// pairsOf sets dst[p] = bf16(x[2p]) | bf16(x[2p+1])<<16 for the pairs of
// x, the odd last value paired with zero, and returns how many it set.
func pairsOf(dst []uint32, x []float32) int {
	n := 0
	if cpu.X86.HasAVX512F {
		n = len(x) &^ 15
		if n > 0 {
			bf16Adjacent(&dst[0], &x[0], n)
		}
	}
	return pairsOfGo(dst, x, n)
}
