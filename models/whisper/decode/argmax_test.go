package decode

import (
	"math"
	"testing"
)

// TestArgmaxAndMax checks argmax and maxOf against the plain scalar scan on
// rows long enough for the vector maximum, with the values that make it
// differ: NaN (which the scan skips and the vector maximum returns), -Inf
// everywhere, +Inf, ties (the first wins) and signed zeros.
func TestArgmaxAndMax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	row := func(n int, set map[int]float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i))) - 2
		}
		for i, v := range set {
			x[i] = v
		}
		return x
	}
	allNegInf := make([]float32, 1000)
	fill(allNegInf, negInf)
	tests := []struct {
		name string
		x    []float32
		want int32
	}{
		{"one value", []float32{3}, 0},
		{"max in the vector body", row(51865, map[int]float32{40000: 5}), 40000},
		{"max in the tail", row(51865, map[int]float32{51864: 5}), 51864},
		{"ties: first wins", row(1000, map[int]float32{10: 5, 700: 5}), 10},
		{"NaN skipped", row(1000, map[int]float32{3: nan, 500: 7, 999: nan}), 500},
		{"NaN larger than nothing", []float32{nan, nan, -1}, 2},
		{"all NaN", []float32{nan, nan}, -1},
		{"all -Inf", allNegInf, -1},
		{"+Inf", row(1000, map[int]float32{77: inf, 78: inf}), 77},
		{"signed zeros", []float32{float32(math.Copysign(0, -1)), 0, -1}, 0},
	}
	for _, tt := range tests {
		if got := argmax(tt.x); got != tt.want {
			t.Errorf("%s: argmax = %d, want %d", tt.name, got, tt.want)
		}
		want := negInf
		for _, v := range tt.x {
			if v > want {
				want = v
			}
		}
		if got := maxOf(tt.x); got != want {
			t.Errorf("%s: maxOf = %v, want %v", tt.name, got, want)
		}
	}
}
