package vmath

//go:noescape
func binaryAVX512(op int, dst, a, b *float32, n int)

//go:noescape
func fillAVX512(dst *float32, n int, v float32)

//go:noescape
func affineAVX512(dst, src *float32, n int, s, t float32)

//go:noescape
func sumF64AVX512(x *float32, n int) float64

//go:noescape
func sumSqDevF64AVX512(x *float32, n int, mean float64) float64

func binary(op int, dst, a, b []float32) {
	if hasAVX512 {
		binaryAVX512(op, &dst[0], &a[0], &b[0], len(dst))
		return
	}
	binaryGo(op, dst, a, b)
}

func fill(dst []float32, v float32) {
	if hasAVX512 {
		fillAVX512(&dst[0], len(dst), v)
		return
	}
	fillGo(dst, v)
}

func affine(dst, src []float32, s, t float32) {
	if hasAVX512 {
		affineAVX512(&dst[0], &src[0], len(dst), s, t)
		return
	}
	affineGo(dst, src, s, t)
}

func sumF64(x []float32) float64 {
	if hasAVX512 {
		return sumF64AVX512(&x[0], len(x))
	}
	return sumF64Go(x)
}

func sumSqDevF64(x []float32, mean float64) float64 {
	if hasAVX512 {
		return sumSqDevF64AVX512(&x[0], len(x), mean)
	}
	return sumSqDevF64Go(x, mean)
}

//go:noescape
func sumSqF64AVX512(x *float32, n int) (sum, sq float64)

func sumSqF64(x []float32) (float64, float64) {
	if hasAVX512 {
		return sumSqF64AVX512(&x[0], len(x))
	}
	return sumSqF64Go(x)
}
