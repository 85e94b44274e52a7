package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArithMatchesGo checks every slice form against its scalar loop,
// bit for bit, on lengths around the vector widths (tails included) and on
// aliased operands.
func TestArithMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 15, 16, 17, 31, 32, 33, 64, 100, 257} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i] = r.Float32()*4 - 2
			b[i] = r.Float32()*4 - 2
		}
		b[0] = 0 // a division by zero
		for op, f := range []func(dst, a, b []float32){Add, Sub, Mul, Div} {
			got, want := make([]float32, n+1), make([]float32, n+1)
			got[n], want[n] = 7, 7 // past the end: untouched
			f(got[:n], a, b)
			binaryGo(op, want[:n], a, b)
			same(t, "binary", op, n, got, want)
			alias := append([]float32(nil), a...)
			f(alias, alias, b)
			same(t, "aliased binary", op, n, alias, want[:n])
		}
		got, want := make([]float32, n+1), make([]float32, n+1)
		Fill(got[:n], 2.5)
		fillGo(want[:n], 2.5)
		same(t, "fill", 0, n, got, want)
		Affine(got[:n], a, 1.7, -0.3)
		affineGo(want[:n], a, 1.7, -0.3)
		same(t, "affine", 0, n, got, want)

		var s, ss float64
		for _, v := range a {
			s += float64(v)
		}
		mean := s / float64(n)
		for _, v := range a {
			ss += (float64(v) - mean) * (float64(v) - mean)
		}
		if g := SumF64(a); math.Abs(g-s) > 1e-12*float64(n) {
			t.Errorf("n=%d: SumF64 = %v, want %v", n, g, s)
		}
		var sq float64
		for _, v := range a {
			sq += float64(v) * float64(v)
		}
		if g, q := SumAndSquaresF64(a); math.Abs(g-s) > 1e-12*float64(n) || math.Abs(q-sq) > 1e-12*float64(n) {
			t.Errorf("n=%d: SumAndSquaresF64 = %v, %v, want %v, %v", n, g, q, s, sq)
		}
		if g := SumSqDevF64(a, mean); math.Abs(g-ss) > 1e-12*float64(n) {
			t.Errorf("n=%d: SumSqDevF64 = %v, want %v", n, g, ss)
		}
	}
	if SumF64(nil) != 0 || SumSqDevF64(nil, 1) != 0 {
		t.Error("sums of an empty slice are not 0")
	}
}

func same(t *testing.T, what string, op, n int, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s op %d n=%d: [%d] = %v, want %v", what, op, n, i, got[i], want[i])
		}
	}
}
