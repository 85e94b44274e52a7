package window

import (
	"math"
	"testing"
)

func TestHann(t *testing.T) {
	// torch.hann_window(4) = [0, 0.5, 1, 0.5]; numpy.hanning(5) = [0, .5, 1, .5, 0]
	for _, tc := range []struct {
		n        int
		periodic bool
		want     []float32
	}{
		{4, true, []float32{0, 0.5, 1, 0.5}},
		{5, false, []float32{0, 0.5, 1, 0.5, 0}},
		{1, true, []float32{1}},
		{0, true, []float32{}},
	} {
		got := Hann(tc.n, tc.periodic)
		if len(got) != len(tc.want) {
			t.Fatalf("Hann(%d, %v) has %d points", tc.n, tc.periodic, len(got))
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-7 {
				t.Errorf("Hann(%d, %v)[%d] = %v, want %v", tc.n, tc.periodic, i, got[i], tc.want[i])
			}
		}
	}
	// The periodic window is the symmetric one of length n+1 without its last point.
	p, s := Hann(400, true), Hann(401, false)
	for i := range p {
		if math.Abs(float64(p[i]-s[i])) > 1e-7 {
			t.Fatalf("periodic[%d] = %v, symmetric(n+1)[%d] = %v", i, p[i], i, s[i])
		}
	}
	h := Hamming(3, false)
	if math.Abs(float64(h[0])-0.08) > 1e-7 || math.Abs(float64(h[1])-1) > 1e-7 {
		t.Errorf("Hamming(3) = %v", h)
	}
}

func TestBesselAndKaiser(t *testing.T) {
	// I0 values from Abramowitz & Stegun table 9.8.
	for _, tc := range []struct{ x, want float64 }{
		{0, 1}, {1, 1.2660658777520082}, {5, 27.239871823604442}, {10, 2815.716628466254},
	} {
		if got := BesselI0(tc.x); math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("I0(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	w := Kaiser(11, 8)
	if w[5] != 1 || math.Abs(w[0]-1/BesselI0(8)) > 1e-15 || w[0] != w[10] {
		t.Errorf("Kaiser(11, 8) = %v", w)
	}
	if b := KaiserBeta(100); math.Abs(b-0.1102*91.3) > 1e-12 {
		t.Errorf("KaiserBeta(100) = %v, want 0.1102·(100−8.7)", b)
	}
}
