// Package signalcmp holds the measures Forge's tests compare signals and
// tensors by: relative L2 error, largest absolute difference, Pearson
// correlation, and a phase-blind log-spectral distance for waveforms that
// may drift in phase (Kokoro's harmonic source integrates F0 over 10⁵
// radians, so a last-bit difference in F0 decorrelates samples while the
// sound stays the same).
package signalcmp

import (
	"fmt"
	"math"

	"github.com/tensorforge/forge/dsp/fft"
)

// RelL2 is ‖a−b‖/‖b‖ over the common length.
func RelL2(a, b []float32) float64 {
	var num, den float64
	for i := range min(len(a), len(b)) {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

// MaxAbs is max |a−b| over the common length.
func MaxAbs(a, b []float32) float64 {
	var m float64
	for i := range min(len(a), len(b)) {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// Pearson is the correlation coefficient of a and b over the common
// length.
func Pearson(a, b []float32) float64 {
	n := min(len(a), len(b))
	var sa, sb float64
	for i := range n {
		sa += float64(a[i])
		sb += float64(b[i])
	}
	ma, mb := sa/float64(n), sb/float64(n)
	var cov, va, vb float64
	for i := range n {
		x, y := float64(a[i])-ma, float64(b[i])-mb
		cov += x * y
		va += x * x
		vb += y * y
	}
	return cov / math.Sqrt(va*vb)
}

// LogSpectralRMS is the RMS difference of log10 STFT magnitudes (Hann 1024,
// hop 256, magnitudes floored at 1e-5) over the frames both signals cover.
func LogSpectralRMS(a, b []float32) (float64, error) {
	const n, hop = 1024, 256
	plan, err := fft.NewRealPlan(n)
	if err != nil {
		return 0, fmt.Errorf("signalcmp: %w", err)
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/n))
	}
	frame := make([]float32, n)
	spec := make([]complex64, plan.Bins())
	logMag := func(x []float32, start int) []float64 {
		for i := range frame {
			frame[i] = x[start+i] * w[i]
		}
		plan.Forward(spec, frame)
		out := make([]float64, len(spec))
		for k, c := range spec {
			out[k] = math.Log10(math.Max(math.Hypot(float64(real(c)), float64(imag(c))), 1e-5))
		}
		return out
	}
	var sum float64
	var cnt int
	for start := 0; start+n <= min(len(a), len(b)); start += hop {
		la, lb := logMag(a, start), logMag(b, start)
		for k := range la {
			d := la[k] - lb[k]
			sum += d * d
			cnt++
		}
	}
	if cnt == 0 {
		return 0, fmt.Errorf("signalcmp: signals of %d and %d samples are shorter than one %d-sample frame", len(a), len(b), n)
	}
	return math.Sqrt(sum / float64(cnt)), nil
}
