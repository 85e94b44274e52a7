package vmath

import "golang.org/x/sys/cpu"

// hasAVX512 selects the vector kernels; fixed at start-up by the CPU.
var hasAVX512 = cpu.X86.HasAVX512F

//go:noescape
func expSubAVX512(dst, src *float32, n int, m float32) float32

//go:noescape
func maxAVX512(src *float32, n int) float32

//go:noescape
func scaleAVX512(dst *float32, n int, s float32)

//go:noescape
func sigmoidAVX512(dst, src *float32, n int)

func expSub(dst, src []float32, m float32) float32 {
	if hasAVX512 {
		return expSubAVX512(&dst[0], &src[0], len(src), m)
	}
	return expSubGo(dst, src, m)
}

func maxOf(src []float32) float32 {
	if hasAVX512 {
		return maxAVX512(&src[0], len(src))
	}
	return maxGo(src)
}

func scale(dst []float32, s float32) {
	if hasAVX512 {
		scaleAVX512(&dst[0], len(dst), s)
		return
	}
	scaleGo(dst, s)
}

func sigmoid(dst, src []float32) {
	if hasAVX512 {
		sigmoidAVX512(&dst[0], &src[0], len(src))
		return
	}
	sigmoidGo(dst, src)
}

//go:noescape
func tanhAVX512(dst, src *float32, n int)

//go:noescape
func geluAVX512(dst, src *float32, n int)

func tanh(dst, src []float32) {
	if hasAVX512 {
		tanhAVX512(&dst[0], &src[0], len(src))
		return
	}
	tanhGo(dst, src)
}

func gelu(dst, src []float32) {
	if hasAVX512 {
		geluAVX512(&dst[0], &src[0], len(src))
		return
	}
	geluGo(dst, src)
}

//go:noescape
func sinqAVX512(dst, src *float32, n int, q float32) (big bool)

// sinq sets dst = sin(src + q·π/2); lanes beyond the exact range of the
// vector reduction are redone in float64.
func sinq(dst, src []float32, q float32) {
	if !hasAVX512 {
		sinqGo(dst, src, q)
		return
	}
	if &dst[0] == &src[0] {
		// In place: the float64 redo reads src after the vector pass has
		// overwritten it, so go through a copy.
		var tmp [256]float32
		for len(src) > 0 {
			n := copy(tmp[:], src)
			sinq(dst[:n], tmp[:n], q)
			dst, src = dst[n:], src[n:]
		}
		return
	}
	if !sinqAVX512(&dst[0], &src[0], len(src), q) {
		return
	}
	for i, v := range src {
		if v >= 65536 || v <= -65536 || v != v {
			dst[i] = sinq64(v, q)
		}
	}
}

//go:noescape
func erfAVX512(dst, src *float32, n int)

func erf(dst, src []float32) {
	if hasAVX512 {
		erfAVX512(&dst[0], &src[0], len(src))
		return
	}
	erfGo(dst, src)
}
