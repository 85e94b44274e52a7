package gemm

//go:noescape
func dotsU8AVX2(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)

//go:noescape
func dotsS8AVX2(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)

//go:noescape
func dotsU8AVX512(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)

//go:noescape
func dotsS8AVX512(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)

// dotsQ8Fast sets out[r] = Σ_p a[p]·(q[r·ldq+p] − zq) with AVX-512 or AVX2 when
// the CPU has it (len(a) a positive multiple of 32) and reports whether it did.
func dotsQ8Fast(a []float32, q []byte, ldq int, signed bool, zq int32, out []float32) bool {
	if !hasAVX2FMA || len(out) == 0 {
		return false
	}
	_ = q[(len(out)-1)*ldq+len(a)-1] // bounds, before the assembly reads
	switch {
	case hasAVX512 && signed:
		dotsS8AVX512(&a[0], &q[0], ldq, len(a), len(out), zq, &out[0])
		return true
	case hasAVX512:
		dotsU8AVX512(&a[0], &q[0], ldq, len(a), len(out), zq, &out[0])
		return true
	}
	if signed {
		dotsS8AVX2(&a[0], &q[0], ldq, len(a), len(out), zq, &out[0])
	} else {
		dotsU8AVX2(&a[0], &q[0], ldq, len(a), len(out), zq, &out[0])
	}
	return true
}
