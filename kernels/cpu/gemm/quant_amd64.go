package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func minMaxAVX512(x *float32, n int) (lo, hi float32, bad bool)

//go:noescape
func quantizeAVX512(dst *uint8, x *float32, n int, scale, zp float32)

var hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW

// minMax returns min(0, min x) and max(0, max x), and whether x holds a NaN
// or an infinity.
func minMax(x []float32) (lo, hi float32, bad bool) {
	if hasAVX512 && len(x) > 0 {
		return minMaxAVX512(&x[0], len(x))
	}
	return minMaxGo(x)
}

// quantize writes saturate(roundHalfEven(x/scale) + zp) to dst.
func quantize(dst []uint8, x []float32, scale, zp float32) {
	if hasAVX512 && len(x) > 0 {
		quantizeAVX512(&dst[0], &x[0], len(x), scale, zp)
		return
	}
	quantizeGo(dst, x, scale, zp)
}

//go:noescape
func sumBytesAVX512(p *uint8, n int, x uint8) uint64

// sumBytesXor returns Σ (p[i] ^ x).
func sumBytesXor(p []uint8, x uint8) int64 {
	var s uint64
	head := 0
	if hasAVX512 && len(p) >= 64 {
		head = len(p) &^ 63
		s = sumBytesAVX512(&p[0], head, x)
	}
	for _, v := range p[head:] {
		s += uint64(v ^ x)
	}
	return int64(s)
}
