package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func dotsX16U8VNNI(h, l *int8, corr *int32, q *byte, ldq, k, rows int, factor float64, out *float32)

//go:noescape
func dotsX16S8VNNI(h, l *int8, corr *int32, q *byte, ldq, k, rows int, factor float64, out *float32)

// hasVNNI512 reports AVX512_VNNI (with AVX-512 F).
var hasVNNI512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI

// int16Dots reports whether LinearQ8Int16 has a kernel for depth k here.
func int16Dots(k int) bool { return hasVNNI512 && k > 0 && k%64 == 0 && k <= 4096 }

// dotsInt16 sets out[r] = float32(factor·Σ_p (256·h[p] + l[p])·(q[r·ldq+p] −
// zq)) for r < len(out), with corr the zero point's lane sums (see
// quantizeInt16); int16Dots(len(h)) must hold.
func dotsInt16(h, l []int8, corr []int32, q []byte, ldq int, signed bool, factor float64, out []float32) {
	k := len(h)
	if len(out) == 0 {
		return
	}
	_ = l[k-1]
	_ = corr[int16Lanes-1]
	_ = q[(len(out)-1)*ldq+k-1] // bounds, before the assembly reads
	if signed {
		dotsX16S8VNNI(&h[0], &l[0], &corr[0], &q[0], ldq, k, len(out), factor, &out[0])
	} else {
		dotsX16U8VNNI(&h[0], &l[0], &corr[0], &q[0], ldq, k, len(out), factor, &out[0])
	}
}
