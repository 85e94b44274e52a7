package vmath

// Arithmetic over slices, for the elementwise interpreter and the norms:
// dst[i] = a[i] op b[i] (16 lanes at a time with AVX-512). Every form
// rounds exactly as its scalar Go loop does (no fused multiply-add), so
// results do not depend on the CPU. dst may alias a or b.

// Add sets dst[i] = a[i] + b[i] for i < len(dst).
func Add(dst, a, b []float32) {
	if len(dst) > 0 {
		binary(opAdd, dst, a[:len(dst)], b[:len(dst)])
	}
}

// Sub sets dst[i] = a[i] − b[i] for i < len(dst).
func Sub(dst, a, b []float32) {
	if len(dst) > 0 {
		binary(opSub, dst, a[:len(dst)], b[:len(dst)])
	}
}

// Mul sets dst[i] = a[i] · b[i] for i < len(dst).
func Mul(dst, a, b []float32) {
	if len(dst) > 0 {
		binary(opMul, dst, a[:len(dst)], b[:len(dst)])
	}
}

// Div sets dst[i] = a[i] / b[i] for i < len(dst).
func Div(dst, a, b []float32) {
	if len(dst) > 0 {
		binary(opDiv, dst, a[:len(dst)], b[:len(dst)])
	}
}

// Fill sets every element of dst to v.
func Fill(dst []float32, v float32) {
	if len(dst) > 0 {
		fill(dst, v)
	}
}

// Affine sets dst[i] = src[i]·s + t (two roundings) for i < len(dst).
func Affine(dst, src []float32, s, t float32) {
	if len(dst) > 0 {
		affine(dst, src[:len(dst)], s, t)
	}
}

// SumF64 returns Σ x[i], accumulated in float64.
func SumF64(x []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return sumF64(x)
}

// SumAndSquaresF64 returns Σ x[i] and Σ x[i]², accumulated in float64 in
// one pass: the moments of a one-pass variance (exact enough in float64
// for float32 data unless |mean|/std exceeds about 10⁶).
func SumAndSquaresF64(x []float32) (sum, sq float64) {
	if len(x) == 0 {
		return 0, 0
	}
	return sumSqF64(x)
}

// SumSqDevF64 returns Σ (x[i] − mean)², accumulated in float64: the
// second pass of a two-pass variance.
func SumSqDevF64(x []float32, mean float64) float64 {
	if len(x) == 0 {
		return 0
	}
	return sumSqDevF64(x, mean)
}

const (
	opAdd = iota
	opSub
	opMul
	opDiv
)

func binaryGo(op int, dst, a, b []float32) {
	switch op {
	case opAdd:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case opSub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case opMul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	case opDiv:
		for i := range dst {
			dst[i] = a[i] / b[i]
		}
	}
}

func fillGo(dst []float32, v float32) {
	for i := range dst {
		dst[i] = v
	}
}

func affineGo(dst, src []float32, s, t float32) {
	for i, v := range src {
		p := v * s
		dst[i] = p + t
	}
}

func sumF64Go(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func sumSqDevF64Go(x []float32, mean float64) float64 {
	var s float64
	for _, v := range x {
		d := float64(v) - mean
		s += d * d
	}
	return s
}

func sumSqF64Go(x []float32) (sum, sq float64) {
	for _, v := range x {
		f := float64(v)
		sum += f
		sq += f * f
	}
	return sum, sq
}
