package neon

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSGEMMKernel8x12 checks the kernel against a float64 product for every
// element of the tile, in a C with padded rows whose padding must survive,
// for beta = 0 (C holds NaN and must not be read) and beta ≠ 0.
func TestSGEMMKernel8x12(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		k           int
		alpha, beta float32
	}{{1, 1, 0}, {2, 1, 1}, {7, -0.5, 2}, {64, 2, 0}, {301, 1, -1}} {
		const ldc = 15
		a := make([]float32, 8*tc.k)
		b := make([]float32, 12*tc.k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64())
		}
		c := make([]float32, 7*ldc+12+5)
		for i := range c {
			c[i] = float32(r.NormFloat64())
			if tc.beta == 0 {
				c[i] = float32(math.NaN())
			}
		}
		orig := append([]float32(nil), c...)
		SGEMMKernel8x12(tc.k, &a[0], &b[0], &c[0], ldc, tc.alpha, tc.beta)
		for i := 0; i < 8; i++ {
			for j := 0; j < ldc && i*ldc+j < len(c); j++ {
				got := c[i*ldc+j]
				if j >= 12 {
					if math.Float32bits(got) != math.Float32bits(orig[i*ldc+j]) {
						t.Fatalf("k=%d: padding c[%d,%d] changed", tc.k, i, j)
					}
					continue
				}
				var s, mag float64
				for p := 0; p < tc.k; p++ {
					v := float64(a[p*8+i]) * float64(b[p*12+j])
					s += v
					mag += math.Abs(v)
				}
				want := float64(tc.alpha) * s
				mag *= math.Abs(float64(tc.alpha))
				if tc.beta != 0 {
					want += float64(tc.beta) * float64(orig[i*ldc+j])
					mag += math.Abs(float64(tc.beta) * float64(orig[i*ldc+j]))
				}
				if d := math.Abs(float64(got) - want); !(d <= float64(tc.k+2)*0x1p-23*mag) {
					t.Fatalf("k=%d alpha=%g beta=%g: c[%d,%d] = %v, want %v", tc.k, tc.alpha, tc.beta, i, j, got, want)
				}
			}
		}
	}
}
