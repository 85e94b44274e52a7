package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSGEMMQ8MatchesDequantizedSGEMM checks that SGEMMQ8 computes, bit for
// bit, SGEMMPackedB and SGEMM on the weight dequantized as Dequantize does
// ((q − zq)·scale in float32), on shapes with tails in every dimension and
// several depth blocks, on every Go kernel and thread count.
func TestSGEMMQ8MatchesDequantizedSGEMM(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	cases := []struct {
		m, n, k, pad int
		signed       bool
		zq           int32
	}{
		{2, 3, 5, 0, false, 128},
		{13, 33, 17, 1, true, 0},
		{50, 384, 384, 0, false, 131}, // an encoder's shortest window, tiny's width
		{64, 100, 1000, 3, true, -5},  // several depth blocks, odd n
		{200, 1536, 384, 0, false, 0}, // beyond the short path's rows
		{37, 64, 31, 2, true, 127},
	}
	for name, e := range testEngines(t) {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%+v", name, c), func(t *testing.T) {
				lda, ldq, ldc := c.k+c.pad, c.k+c.pad, c.n+c.pad
				a := randSlice(r, c.m*lda)
				q := make([]byte, c.n*ldq)
				for i := range q {
					q[i] = byte(r.IntN(256))
				}
				scale := float32(0.0173)
				w := make([]float32, c.n*c.k) // the dequantized weight, n×k
				for j := range c.n {
					for p := range c.k {
						w[j*c.k+p] = (float32(qval(q[j*ldq+p], c.signed)) - float32(c.zq)) * scale
					}
				}
				got := randSlice(r, c.m*ldc)
				e.SGEMMQ8(c.m, c.n, c.k, a, lda, q, ldq, c.signed, c.zq, scale, got, ldc)
				packed := make([]float32, c.m*ldc)
				e.SGEMMPackedB(false, c.m, a, lda, e.PackB(true, c.k, c.n, w, c.k), packed, ldc)
				plain := make([]float32, c.m*ldc)
				e.blocked(false, true, c.m, c.n, c.k, 1, a, lda, w, c.k, nil, quantB{}, 0, plain, ldc, e.threads)
				for i := range c.m {
					for j := range c.n {
						g := got[i*ldc+j]
						if math.Float32bits(g) != math.Float32bits(packed[i*ldc+j]) || math.Float32bits(g) != math.Float32bits(plain[i*ldc+j]) {
							t.Fatalf("C[%d,%d] = %v, packed-B SGEMM %v, SGEMM %v", i, j, g, packed[i*ldc+j], plain[i*ldc+j])
						}
					}
				}
			})
		}
	}
}

// TestSGEMMQ8BadArgumentsPanic checks that SGEMMQ8 names a short operand
// rather than reading past it.
func TestSGEMMQ8BadArgumentsPanic(t *testing.T) {
	e := Default()
	for _, c := range []struct {
		name string
		call func()
	}{
		{"short q", func() {
			e.SGEMMQ8(4, 8, 16, make([]float32, 64), 16, make([]byte, 8*16-1), 16, false, 0, 1, make([]float32, 32), 8)
		}},
		{"short c", func() {
			e.SGEMMQ8(4, 8, 16, make([]float32, 64), 16, make([]byte, 8*16), 16, false, 0, 1, make([]float32, 31), 8)
		}},
		{"zero point out of range", func() {
			e.SGEMMQ8(4, 8, 16, make([]float32, 64), 16, make([]byte, 8*16), 16, true, 200, 1, make([]float32, 32), 8)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			c.call()
		})
	}
}
