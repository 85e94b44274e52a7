package vad

import (
	"math"
	"testing"
)

// TestNonFinite: the branch-free check finds the first NaN or infinity
// wherever it sits (a four-sample block or the tail), and passes every
// finite value, the largest included.
func TestNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name string
		n    int
		set  map[int]float32
		want int
	}{
		{"zeros", 512, nil, -1},
		{"largest finite values", 7, map[int]float32{0: math.MaxFloat32, 6: -math.MaxFloat32, 3: math.SmallestNonzeroFloat32}, -1},
		{"NaN first", 512, map[int]float32{0: nan}, 0},
		{"+Inf in a block", 512, map[int]float32{301: inf}, 301},
		{"−Inf last", 512, map[int]float32{511: -inf}, 511},
		{"NaN in the tail", 7, map[int]float32{5: nan}, 5},
		{"the first of two", 512, map[int]float32{9: inf, 4: nan}, 4},
		{"empty", 0, nil, -1},
	} {
		x := make([]float32, tc.n)
		for i, v := range tc.set {
			x[i] = v
		}
		if got := nonFinite(x); got != tc.want {
			t.Errorf("%s: nonFinite = %d, want %d", tc.name, got, tc.want)
		}
	}
}
