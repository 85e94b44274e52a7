package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func dotAVX2(x, y *float32, n int) float32

//go:noescape
func axpyAVX2(s float32, x, y *float32, n int)

//go:noescape
func axpy8AVX512(s *float32, x *float32, ldx int, y *float32, n int)

var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// axpy8 runs axpy(s[r], x[r·ldx : r·ldx+len(y)], y) for r = 0 … 7, in
// order, with the same roundings, loading and storing y once; it reports
// false, doing nothing, where the CPU has no AVX-512 form.
func axpy8(s *[8]float32, x []float32, ldx int, y []float32) bool {
	if !hasAVX512 || !hasAVX2FMA || len(y) == 0 {
		return false
	}
	_ = x[7*ldx+len(y)-1] // bounds, before the assembly reads
	axpy8AVX512(&s[0], &x[0], ldx, &y[0], len(y))
	return true
}

//go:noescape
func dotRows8AVX512(m *float32, ld int, v *float32, n int, out *float32)

// hasDotRows8 says whether dotRows8 has its kernel here: AVX-512F, and VL
// for the scratch registers of its reductions.
var hasDotRows8 = hasAVX2FMA && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

// dotRows8 sets out[r] = dot(m[r·ld:][:len(v)], v) for r < 8, bit for bit,
// and reports true; it reports false, leaving out alone, where it has no
// kernel for this CPU or len(v) (a positive multiple of 32).
func dotRows8(m []float32, ld int, v []float32, out *[8]float32) bool {
	n := len(v)
	if !hasDotRows8 || n == 0 || n%32 != 0 {
		return false
	}
	_ = m[7*ld+n-1]
	dotRows8AVX512(&m[0], ld, &v[0], n, &out[0])
	return true
}

// dot returns Σ x[i]·y[i] over len(x) (y at least as long).
func dot(x, y []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	y = y[:len(x)]
	if hasAVX2FMA {
		return dotAVX2(&x[0], &y[0], len(x))
	}
	return dotGo(x, y)
}

// axpy computes y[i] += s·x[i] over len(x) (y at least as long).
func axpy(s float32, x, y []float32) {
	if len(x) == 0 {
		return
	}
	y = y[:len(x)]
	if hasAVX2FMA {
		axpyAVX2(s, &x[0], &y[0], len(x))
		return
	}
	axpyGo(s, x, y)
}
