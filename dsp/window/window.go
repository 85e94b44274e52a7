// Package window builds the analysis windows the transforms use, with the
// conventions of torch and scipy: a periodic window of length n is the
// first n points of the symmetric window of length n+1, which is what
// spectral analysis (torch.hann_window's default) wants.
package window

import "math"

// Hann returns the Hann window 0.5 − 0.5·cos(2πi/d), with d = n for a
// periodic window (torch.hann_window(n), the Whisper and Kokoro window) and
// d = n−1 for a symmetric one (numpy.hanning). Computed in float64.
func Hann(n int, periodic bool) []float32 {
	return cosineSum(n, periodic, 0.5, 0.5)
}

// Hamming returns the Hamming window 0.54 − 0.46·cos(2πi/d), with d as for
// Hann.
func Hamming(n int, periodic bool) []float32 {
	return cosineSum(n, periodic, 0.54, 0.46)
}

func cosineSum(n int, periodic bool, a0, a1 float64) []float32 {
	w := make([]float32, max(n, 0))
	if n == 1 {
		w[0] = 1
		return w
	}
	d := float64(n)
	if !periodic {
		d = float64(n - 1)
	}
	for i := range w {
		w[i] = float32(a0 - a1*math.Cos(2*math.Pi*float64(i)/d))
	}
	return w
}

// Kaiser returns the symmetric Kaiser window of length n and shape β:
// I0(β·√(1 − (2i/(n−1) − 1)²)) / I0(β).
func Kaiser(n int, beta float64) []float64 {
	w := make([]float64, max(n, 0))
	if n == 1 {
		w[0] = 1
		return w
	}
	den := BesselI0(beta)
	for i := range w {
		r := 2*float64(i)/float64(n-1) - 1
		w[i] = BesselI0(beta*math.Sqrt(max(0, 1-r*r))) / den
	}
	return w
}

// BesselI0 is the modified Bessel function of the first kind, order 0,
// summed as its power series (converges for every x; Kaiser windows need
// x ≤ ~40, where 60 terms are far more than enough).
func BesselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	q := x * x / 4
	for k := 1; k < 500; k++ {
		term *= q / float64(k*k)
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	return sum
}

// KaiserBeta returns the β for a Kaiser-windowed FIR with a stopband
// attenuation of atten dB (Kaiser's empirical formula).
func KaiserBeta(atten float64) float64 {
	switch {
	case atten > 50:
		return 0.1102 * (atten - 8.7)
	case atten >= 21:
		return 0.5842*math.Pow(atten-21, 0.4) + 0.07886*(atten-21)
	}
	return 0
}
