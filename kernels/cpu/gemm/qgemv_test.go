package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// refLinearQ8 is C = A·((Q − zq)·scale)ᵀ in float64, with the magnitudes
// Σ |a·w| that bound the rounding of a float32 evaluation.
func refLinearQ8(m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, scale float32) (want, mag []float64) {
	want, mag = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, g float64
			for p := range k {
				w := float64(qval(q[j*ldq+p], signed)-zq) * float64(scale)
				s += float64(a[i*lda+p]) * w
				g += math.Abs(float64(a[i*lda+p]) * w)
			}
			want[i*n+j], mag[i*n+j] = s, g
		}
	}
	return want, mag
}

func TestLinearQ8MatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	engines := testEngines(t)
	for _, c := range []struct {
		m, n, k, pad int
		signed       bool
		zq           int32
	}{
		{1, 1, 1, 0, false, 0}, {1, 7, 31, 1, false, 128}, {1, 65, 32, 0, true, 0},
		{2, 130, 64, 3, false, 3}, {3, 33, 100, 2, true, -7}, {5, 200, 384, 0, false, 255},
		{1, 300, 1536, 0, true, 127}, {4, 1, 64, 0, true, -128}, {2, 5, 0, 0, false, 9},
	} {
		lda, ldq, ldc := max(c.k+c.pad, 1), max(c.k+c.pad, 1), c.n+c.pad
		a := randSlice(r, c.m*lda)
		q := make([]byte, c.n*ldq)
		for i := range q {
			q[i] = byte(r.IntN(256))
		}
		const scale = 0.0173
		want, mag := refLinearQ8(c.m, c.n, c.k, a, lda, q, ldq, c.signed, c.zq, scale)
		for name, e := range engines {
			got := make([]float32, c.m*ldc)
			for i := range got {
				got[i] = -42 // padding must stay
			}
			e.LinearQ8(c.m, c.n, c.k, a, lda, q, ldq, c.signed, c.zq, scale, got, ldc)
			eps := float64(c.k+2) * 0x1p-23
			for i := range c.m {
				for j := range ldc {
					g := got[i*ldc+j]
					if j >= c.n {
						if g != -42 {
							t.Fatalf("%s %+v: padding C[%d,%d] changed to %v", name, c, i, j, g)
						}
						continue
					}
					w, bound := want[i*c.n+j], eps*mag[i*c.n+j]+1e-30
					if d := math.Abs(float64(g) - w); !(d <= bound) {
						t.Fatalf("%s %+v: C[%d,%d] = %v, want %v (|diff| %.3g > %.3g)", name, c, i, j, g, w, d, bound)
					}
				}
			}
		}
	}
}

func TestLinearQ8AllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops entries under the race detector; run without -race")
	}
	e, err := NewGo(2, GoKernels()[0])
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	const m, n, k = 1, 4096, 384
	a, q, c := randSlice(r, m*k), make([]byte, n*k), make([]float32, m*n)
	e.LinearQ8(m, n, k, a, k, q, k, false, 128, 0.5, c, n)
	if allocs := testing.AllocsPerRun(20, func() { e.LinearQ8(m, n, k, a, k, q, k, false, 128, 0.5, c, n) }); allocs >= 1 {
		t.Errorf("%.1f allocations per call, want 0", allocs)
	}
}

func TestLinearQ8BadArgumentsPanic(t *testing.T) {
	a, q, c := make([]float32, 8), make([]byte, 8), make([]float32, 4)
	for _, f := range []func(){
		func() { LinearQ8(1, 2, 4, a, 4, q, 4, false, 300, 1, c, 2) }, // zero point out of range
		func() { LinearQ8(1, 2, 4, a, 4, q, 4, true, 200, 1, c, 2) },  // signed zero point out of range
		func() { LinearQ8(1, 3, 4, a, 4, q, 4, false, 0, 1, c, 3) },   // q too short
		func() { LinearQ8(1, 2, 4, a, 3, q, 4, false, 0, 1, c, 2) },   // lda < k
		func() { LinearQ8(-1, 2, 4, a, 4, q, 4, false, 0, 1, c, 2) },  // negative m
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

// BenchmarkLinearQ8 reports the weight bytes streamed per second for a
// decoder's projections and logits (Whisper tiny's, and base's logits),
// with A in float32 and (int16) rounded to 16 bits where the CPU has the
// unit, beside the float32 vector product over the dequantized weight and
// (bf16) the bfloat16 GEMM on it where the CPU has a bfloat16 unit;
// FORGE_BENCH_THREADS=1 for one thread.
func BenchmarkLinearQ8(b *testing.B) {
	e := Default()
	if os.Getenv("FORGE_BENCH_THREADS") == "1" {
		e, _ = NewGo(1, "")
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][3]int{{1, 384, 384}, {1, 1536, 384}, {1, 51865, 384}, {1, 51865, 512}, {5, 51865, 384}} {
		m, n, k := s[0], s[1], s[2]
		a, c := randSlice(r, m*k), make([]float32, m*n)
		q := make([]byte, n*k)
		for i := range q {
			q[i] = byte(r.IntN(256))
		}
		w := randSlice(r, n*k)
		b.Run(fmt.Sprintf("q8/%dx%dx%d", m, n, k), func(b *testing.B) {
			for b.Loop() {
				e.LinearQ8(m, n, k, a, k, q, k, false, 128, 0.01, c, n)
			}
			b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		if Int16Path() != "" {
			b.Run(fmt.Sprintf("int16/%dx%dx%d", m, n, k), func(b *testing.B) {
				for b.Loop() {
					e.LinearQ8Int16(m, n, k, a, k, q, k, false, 128, 0.01, c, n)
				}
				b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
		if bw := e.PackBF16(true, k, n, w, k); bw != nil {
			b.Run(fmt.Sprintf("bf16/%dx%dx%d", m, n, k), func(b *testing.B) {
				for b.Loop() {
					e.GemmBF16(false, m, a, k, bw, nil, c, n)
				}
				b.ReportMetric(float64(2*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
		b.Run(fmt.Sprintf("f32/%dx%dx%d", m, n, k), func(b *testing.B) {
			for b.Loop() {
				e.SGEMM(false, true, m, n, k, 1, a, k, w, k, 0, c, n)
			}
			b.ReportMetric(float64(4*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
