package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotRows8MatchesDot holds the eight-row kernel to dot's rounding, bit
// for bit, for lengths from one block to several, row strides longer than
// the rows, and rows with zeros, infinities and NaNs in them.
func TestDotRows8MatchesDot(t *testing.T) {
	if !hasDotRows8 {
		t.Skip("no AVX-512 (F and VL) on this CPU: gemv takes dot row by row")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		n, ld   int
		special bool
	}{
		{"one block", 32, 32, false},
		{"LSTM 256", 256, 256, false},
		{"strided", 128, 165, false},
		{"long", 1024, 1024, false},
		{"special values", 64, 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := make([]float32, 7*tc.ld+tc.n)
			v := make([]float32, tc.n)
			for i := range m {
				m[i] = float32(r.NormFloat64())
			}
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			if tc.special {
				m[5] = 0
				m[tc.ld+3] = float32(math.Inf(1))
				m[2*tc.ld+9] = float32(math.NaN())
				m[3*tc.ld+1], m[3*tc.ld+2] = float32(math.Inf(1)), float32(math.Inf(-1))
				v[40] = 0
			}
			var got [8]float32
			if !dotRows8(m, tc.ld, v, &got) {
				t.Fatal("dotRows8 declined a multiple of 32")
			}
			for row := range 8 {
				want := dot(m[row*tc.ld:row*tc.ld+tc.n], v)
				if math.Float32bits(got[row]) != math.Float32bits(want) {
					t.Errorf("row %d: %v (%#x), dot %v (%#x)", row, got[row], math.Float32bits(got[row]), want, math.Float32bits(want))
				}
			}
		})
	}
	var out [8]float32
	if dotRows8(make([]float32, 8*40), 40, make([]float32, 40), &out) {
		t.Errorf("dotRows8 took a length that is not a multiple of 32")
	}
}

// TestGemvRowsUnchanged runs one-row products with a transposed B (an LSTM
// step's h·W_hhᵀ) whose columns are not a multiple of eight, with alpha
// and beta, against dot row by row: the eight-row path and the rows after
// it give what dot alone gave.
func TestGemvRowsUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	e, err := NewGo(1, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ n, k int }{{1024, 256}, {37, 64}, {13, 40}} {
		b := make([]float32, tc.n*tc.k)
		h := make([]float32, tc.k)
		c := make([]float32, tc.n)
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		for i := range h {
			h[i] = float32(r.NormFloat64())
		}
		for i := range c {
			c[i] = float32(r.NormFloat64())
		}
		const alpha, beta = 0.75, -1.5
		want := make([]float32, tc.n)
		for j := range want {
			want[j] = alpha*dot(b[j*tc.k:(j+1)*tc.k], h) + beta*c[j]
		}
		e.SGEMM(false, true, 1, tc.n, tc.k, alpha, h, tc.k, b, tc.k, beta, c, tc.n)
		for j := range want {
			if math.Float32bits(c[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%d×%d: output %d is %v, dot row by row %v", tc.n, tc.k, j, c[j], want[j])
			}
		}
	}
}
