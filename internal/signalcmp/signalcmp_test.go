package signalcmp

import (
	"math"
	"testing"
)

func TestMeasures(t *testing.T) {
	n := 4096
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = float32(math.Sin(2 * math.Pi * 440 * float64(i) / 24000))
		b[i] = 2 * a[i]
		c[i] = float32(math.Sin(2*math.Pi*440*float64(i)/24000 + 1)) // the same tone, out of phase
	}
	if r := RelL2(a, a); r != 0 {
		t.Errorf("RelL2(a, a) = %g", r)
	}
	if r := RelL2(b, a); math.Abs(r-1) > 1e-6 {
		t.Errorf("RelL2(2a, a) = %g, want 1", r)
	}
	if m := MaxAbs(b, a); math.Abs(m-1) > 1e-3 {
		t.Errorf("MaxAbs(2a, a) = %g, want about 1", m)
	}
	if p := Pearson(a, b); math.Abs(p-1) > 1e-9 {
		t.Errorf("Pearson(a, 2a) = %g, want 1", p)
	}
	if p := Pearson(a, c); p > 0.6 {
		t.Errorf("Pearson of a tone and its phase-shifted copy = %g, want well below 1", p)
	}
	// Noise, and the same noise one sample later: samples uncorrelated,
	// spectra alike.
	x, y, z := make([]float32, n), make([]float32, n), make([]float32, n)
	seed := uint32(1)
	for i := range x {
		seed = seed*1664525 + 1013904223
		x[i] = float32(seed>>8)/(1<<24) - 0.5
		z[i] = 2 * x[i]
		if i > 0 {
			y[i] = x[i-1]
		}
	}
	if p := Pearson(x, y); math.Abs(p) > 0.1 {
		t.Errorf("Pearson of noise and its delayed copy = %g, want near 0", p)
	}
	ls, err := LogSpectralRMS(x, y)
	if err != nil || ls > 0.05 {
		t.Errorf("LogSpectralRMS of noise and its delayed copy = %g, %v; want near 0", ls, err)
	}
	if ls, _ := LogSpectralRMS(z, x); math.Abs(ls-math.Log10(2)) > 1e-6 {
		t.Errorf("LogSpectralRMS(2x, x) = %g, want log10(2)", ls)
	}
	if _, err := LogSpectralRMS(a[:100], b[:100]); err == nil {
		t.Error("a signal shorter than one frame gave no error")
	}
}
