package vmath

import "math"

// Exp32, Tanh32, Sigmoid32, Erf32 and the GELUs are single-precision
// elementary functions. They are accurate to a few ulp over
// the whole float32 range, which is what the golden comparisons need, and
// several times faster than going through float64 math: Whisper's softmax
// alone takes tens of millions of exponentials per utterance.

// Exp32 returns eˣ.
func Exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.72284:
		return float32(math.Inf(1))
	case x < -103.97208:
		return 0
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693145751953125
		ln2lo = 1.42860682030941723212e-6
	)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*ln2hi - n*ln2lo
	p := 1 + r*(1+r*(0.5+r*(0.16666666666666666+r*(0.041666666666666664+r*(0.008333333333333333+r*(0.001388888888888889+r*0.0001984126984126984))))))
	return ldexp32(p, int(n))
}

// ldexp32 returns p·2ⁿ for the n that Exp32 produces.
func ldexp32(p float32, n int) float32 {
	if n < -126 {
		return p * math.Float32frombits(uint32(n+126+127)<<23) * math.Float32frombits(uint32(-126+127)<<23)
	}
	if n > 127 {
		return p * math.Float32frombits(uint32(127+127)<<23) * math.Float32frombits(uint32(n-127+127)<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// Log32 returns the natural logarithm.
func Log32(x float32) float32 {
	switch {
	case x != x || x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case math.IsInf(float64(x), 1):
		return x
	}
	return float32(math.Log(float64(x)))
}

// Tanh32 returns the hyperbolic tangent.
func Tanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	switch {
	case x != x:
		return x
	case a < 0.55:
		// Taylor series to x¹⁷: 1 − 2/(e^{2a}+1) would cancel here.
		z := x * x
		p := float32(6404582.0 / 10854718875)
		p = p*z - 929569.0/638512875
		p = p*z + 21844.0/6081075
		p = p*z - 1382.0/155925
		p = p*z + 62.0/2835
		p = p*z - 17.0/315
		p = p*z + 2.0/15
		p = p*z - 1.0/3
		return x + x*z*p
	case a > 9.1:
		if x > 0 {
			return 1
		}
		return -1
	}
	e := Exp32(2 * a)
	t := 1 - 2/(e+1)
	if x < 0 {
		return -t
	}
	return t
}

// Sigmoid32 returns 1/(1+e⁻ˣ).
func Sigmoid32(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + Exp32(-x))
	}
	e := Exp32(x)
	return e / (1 + e)
}

// Erf32 returns the error function, through erfc's Chebyshev fit
// (fractional error below 1.2e-7, Numerical Recipes' erfcc).
func Erf32(x float32) float32 {
	if x != x {
		return x
	}
	z := float64(x)
	if z < 0 {
		z = -z
	}
	if z < 0.5 {
		// Taylor series: accurate where 1 − erfc would cancel.
		z2 := float64(x) * float64(x)
		s := float64(x) * (1.1283791670955126 + z2*(-0.37612638903183754+z2*(0.11283791670955126+z2*(-0.026866170645131252+z2*(0.005223977625442188+z2*(-0.0008548327023450852+z2*0.00012055332981789664))))))
		return float32(s)
	}
	t := 1 / (1 + 0.5*z)
	poly := -z*z - 1.26551223 + t*(1.00002368+t*(0.37409196+t*(0.09678418+
		t*(-0.18628806+t*(0.27886807+t*(-1.13520398+t*(1.48851587+t*(-0.82215223+t*0.17087277))))))))
	y := t * float64(Exp32(float32(poly)))
	if x >= 0 {
		return float32(1 - y)
	}
	return float32(y - 1)
}

// GeluErf32 is x·Φ(x) with the exact normal CDF.
func GeluErf32(x float32) float32 {
	return 0.5 * x * (1 + Erf32(x*0.70710678118654752))
}

// GeluTanh32 is the tanh approximation of GELU.
func GeluTanh32(x float32) float32 {
	return 0.5 * x * (1 + Tanh32(0.7978845608028654*(x+0.044715*x*x*x)))
}
