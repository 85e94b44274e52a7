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

//go:noescape
func winoTransformAVX512(dst *float32, dstStride int, src *float32, offs *int, coefT *float32, terms, outs, chunks int)

// hasWinoTransform says whether winoTransform has its AVX-512 kernel here.
var hasWinoTransform = hasAVX512 && hasAVX2FMA

// winogradVectorized: the transforms (winoTransform) and the phase
// shuffles (deinterleave, interleave: AVX-512F) all have their kernels.
var winogradVectorized = hasWinoTransform && cpu.X86.HasAVX512F

// winoTransform sets dst[r·dstStride + j] = Σ_i coefT[14i + r]·src[offs[i]
// + j] for r < outs, j < cols (a multiple of 16): one of Winograd's
// transforms over a block of columns (see winograd.go). It reports false,
// doing nothing, where the CPU has no kernel for it.
func winoTransform(dst []float32, dstStride int, src []float32, offs []int, coefT []float32, outs, cols int) bool {
	if !hasWinoTransform || cols%16 != 0 || cols == 0 || outs < 1 || outs > winoMaxRows || len(offs) == 0 {
		return false
	}
	_ = coefT[winoMaxRows*len(offs)-1]
	_ = dst[(outs-1)*dstStride+cols-1]
	for _, o := range offs {
		_ = src[o+cols-1]
	}
	winoTransformAVX512(&dst[0], dstStride, &src[0], &offs[0], &coefT[0], len(offs), outs, cols/16)
	return true
}

// deinterleave sets rows[φ·wp + c] = x[φ + S·c] for φ < S, c < wp (a
// multiple of 16) by 16×16 transposes, and reports true; it reports false,
// doing nothing, where the CPU has no AVX-512 or x is too short for the
// transposes' reads. It writes whole blocks of 16 rows: up to 16·wp
// floats past the S rows.
func deinterleave(rows, x []float32, S, wp int) bool {
	last := (S - 1) / 16 * 16 // the last block's first phase
	if !cpu.X86.HasAVX512F || wp%16 != 0 || S*(wp-1)+last+16 > len(x) {
		return false
	}
	_ = rows[(last+16)*wp-1]
	for φ0 := 0; φ0 < S; φ0 += 16 {
		for c0 := 0; c0 < wp; c0 += 16 {
			transpose16(&rows[φ0*wp+c0], wp, &x[φ0+S*c0], S, 16, 0xFFFF)
		}
	}
	return true
}

// interleave sets y[φ + S·c] = tp[φ·n + c] for φ < S over whole blocks of
// 16 columns c that fit y, by 16×16 transposes, and returns how many
// elements of y it set (0 where the CPU has no AVX-512).
func interleave(y, tp []float32, S, n int) int {
	if !cpu.X86.HasAVX512F {
		return 0
	}
	c0 := 0
	for ; c0+16 <= n && S*(c0+16) <= len(y); c0 += 16 {
		for φ0 := 0; φ0 < S; φ0 += 16 {
			rows := min(16, S-φ0)
			_ = tp[(φ0+rows-1)*n+c0+15]
			transpose16(&y[S*c0+φ0], S, &tp[φ0*n+c0], n, rows, uint16(1<<rows-1))
		}
	}
	return S * c0
}
