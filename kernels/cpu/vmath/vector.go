package vmath

import "math"

// ExpSub sets dst[i] = e^(src[i]−m) and returns the sum of the results:
// the inner loop of a softmax. dst may alias src.
func ExpSub(dst, src []float32, m float32) float32 {
	if len(src) == 0 {
		return 0
	}
	dst = dst[:len(src)]
	return expSub(dst, src, m)
}

// Exp sets dst[i] = e^src[i]. dst may alias src.
func Exp(dst, src []float32) {
	if len(src) > 0 {
		expSub(dst[:len(src)], src, 0)
	}
}

// Max returns the largest element (NaN if any element is NaN, −∞ for an
// empty slice).
func Max(src []float32) float32 {
	if len(src) == 0 {
		return float32(math.Inf(-1))
	}
	return maxOf(src)
}

// Scale multiplies every element of dst by s.
func Scale(dst []float32, s float32) {
	if len(dst) > 0 {
		scale(dst, s)
	}
}

// Sigmoid sets dst[i] = 1/(1+e^−src[i]). dst may alias src.
func Sigmoid(dst, src []float32) {
	if len(src) > 0 {
		sigmoid(dst[:len(src)], src)
	}
}

func expSubGo(dst, src []float32, m float32) float32 {
	var sum float32
	for i, v := range src {
		e := Exp32(v - m)
		dst[i] = e
		sum += e
	}
	return sum
}

func maxGo(src []float32) float32 {
	m := src[0]
	for _, v := range src {
		if v != v {
			return v
		}
		if v > m {
			m = v
		}
	}
	return m
}

func scaleGo(dst []float32, s float32) {
	for i := range dst {
		dst[i] *= s
	}
}

func sigmoidGo(dst, src []float32) {
	for i, v := range src {
		dst[i] = Sigmoid32(v)
	}
}

// Tanh sets dst[i] = tanh(src[i]). dst may alias src.
func Tanh(dst, src []float32) {
	if len(src) > 0 {
		tanh(dst[:len(src)], src)
	}
}

// GeluErf sets dst[i] = src[i]·Φ(src[i]) with the exact normal CDF, as
// torch.nn.GELU(). dst may alias src.
func GeluErf(dst, src []float32) {
	if len(src) > 0 {
		gelu(dst[:len(src)], src)
	}
}

func tanhGo(dst, src []float32) {
	for i, v := range src {
		dst[i] = Tanh32(v)
	}
}

func geluGo(dst, src []float32) {
	for i, v := range src {
		dst[i] = GeluErf32(v)
	}
}

// Sin sets dst[i] = sin(src[i]). dst may alias src.
func Sin(dst, src []float32) {
	if len(src) > 0 {
		sinq(dst[:len(src)], src, 0)
	}
}

// Cos sets dst[i] = cos(src[i]). dst may alias src.
func Cos(dst, src []float32) {
	if len(src) > 0 {
		sinq(dst[:len(src)], src, 1)
	}
}

func sinq64(v, q float32) float32 {
	if q == 0 {
		return float32(math.Sin(float64(v)))
	}
	return float32(math.Cos(float64(v)))
}

func sinqGo(dst, src []float32, q float32) {
	for i, v := range src {
		dst[i] = sinq64(v, q)
	}
}

// Erf sets dst[i] = erf(src[i]). dst may alias src.
func Erf(dst, src []float32) {
	if len(src) > 0 {
		erf(dst[:len(src)], src)
	}
}

func erfGo(dst, src []float32) {
	for i, v := range src {
		dst[i] = Erf32(v)
	}
}
