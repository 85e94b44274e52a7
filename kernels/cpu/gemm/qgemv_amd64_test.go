package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotsKernelsAgree runs every byte-weight dot kernel this CPU has —
// dotsQ8Fast picks only the widest — against the Go loop, for unsigned and
// signed weights, odd and even row counts.
func TestDotsKernelsAgree(t *testing.T) {
	type kernel func(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
	kernels := []struct {
		name     string
		u8, s8   kernel
		possible bool
	}{
		{"avx2", dotsU8AVX2, dotsS8AVX2, hasAVX2FMA},
		{"avx512", dotsU8AVX512, dotsS8AVX512, hasAVX512},
	}
	r := rand.New(rand.NewPCG(11, 12))
	const k, ldq = 96, 100
	a := randSlice(r, k)
	for _, rows := range []int{1, 2, 5} {
		q := make([]byte, rows*ldq)
		for i := range q {
			q[i] = byte(r.IntN(256))
		}
		for _, signed := range []bool{false, true} {
			zq := int32(3)
			want := make([]float32, rows)
			for i := range want {
				for p := 0; p < k; p++ {
					want[i] += a[p] * float32(qval(q[i*ldq+p], signed)-zq)
				}
			}
			for _, kn := range kernels {
				if !kn.possible {
					continue
				}
				f := kn.u8
				if signed {
					f = kn.s8
				}
				got := make([]float32, rows)
				f(&a[0], &q[0], ldq, k, rows, zq, &got[0])
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-3*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s signed=%v rows=%d: out[%d] = %v, want %v", kn.name, signed, rows, i, got[i], want[i])
					}
				}
			}
		}
	}
}
