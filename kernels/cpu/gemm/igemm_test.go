package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// intEngines returns an engine per integer kernel this CPU runs, on one and
// two threads.
func intEngines(t testing.TB) map[string]*Engine {
	t.Helper()
	es := map[string]*Engine{}
	for _, k := range igemmKernels() {
		for _, threads := range []int{1, 2} {
			e, err := NewGo(threads, "go")
			if err != nil {
				t.Fatal(err)
			}
			e.ikern = k
			es[fmt.Sprintf("%s/%dt", k.name, threads)] = e
		}
	}
	return es
}

// refMatMulInteger is ONNX MatMulInteger in int64, straight from the
// definition: C[i,j] = Σ_p (A[i,p] − za)·(op(B)[p,j] − zb[j]).
func refMatMulInteger[T uint8 | int8](m, n, k int, a []uint8, lda int, za uint8, transB bool, b []T, ldb int, zb []T) []int64 {
	c := make([]int64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			z := int64(zb[0])
			if len(zb) == n {
				z = int64(zb[j])
			}
			var s int64
			for p := 0; p < k; p++ {
				var bv int64
				if transB {
					bv = int64(b[j*ldb+p])
				} else {
					bv = int64(b[p*ldb+j])
				}
				s += (int64(a[i*lda+p]) - int64(za)) * (bv - z)
			}
			c[i*n+j] = s
		}
	}
	return c
}

type intCase struct {
	m, n, k  int
	transB   bool
	pad      int
	perCol   bool
	extremes bool // all A = 255 or 0 against B at its extremes
}

func intCases() []intCase {
	var cs []intCase
	sizes := [][3]int{{1, 1, 1}, {1, 33, 7}, {5, 3, 2}, {12, 32, 4}, {13, 31, 5}, {25, 65, 63}, {40, 100, 384}, {7, 9, 0}, {0, 4, 4}, {3, 0, 4}}
	for x, s := range sizes {
		for _, tb := range []bool{true, false} {
			cs = append(cs, intCase{m: s[0], n: s[1], k: s[2], transB: tb, pad: x % 3, perCol: x%2 == 1})
		}
	}
	// The SIMD packing paths (row strides that are multiples of 4, at least
	// 16 groups of four) next to their fallbacks, with partial groups,
	// narrow slivers and row strides that are not.
	cs = append(cs,
		intCase{m: 30, n: 70, k: 130, transB: true, pad: 2},
		intCase{m: 30, n: 70, k: 130, transB: true, pad: 1},
		intCase{m: 13, n: 10, k: 200, transB: true, perCol: true},
		intCase{m: 25, n: 40, k: 256, transB: false, pad: 3},
		intCase{m: 25, n: 40, k: 257, transB: false, pad: 3, perCol: true},
	)
	// Whisper's largest depth, with values at the ends of both ranges: the
	// exactness bound, not an average case.
	cs = append(cs, intCase{m: 14, n: 40, k: 1536, transB: true, extremes: true},
		intCase{m: 14, n: 40, k: 1536, transB: false, perCol: true, extremes: true})
	return cs
}

func fillU8(r *rand.Rand, x []uint8, extremes bool) {
	for i := range x {
		if extremes {
			x[i] = []uint8{0, 255}[r.IntN(2)]
		} else {
			x[i] = uint8(r.IntN(256))
		}
	}
}

func TestGemmU8Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for name, e := range intEngines(t) {
		t.Run(name, func(t *testing.T) {
			for _, tc := range intCases() {
				br, bc := tc.k, tc.n
				if tc.transB {
					br, bc = tc.n, tc.k
				}
				lda, ldb, ldc := max(1, tc.k+tc.pad), max(1, bc+tc.pad), max(1, tc.n+tc.pad)
				a := make([]uint8, tc.m*lda)
				fillU8(r, a, tc.extremes)
				za := uint8(r.IntN(256))
				if tc.extremes {
					za = 0
				}
				nz := 1
				if tc.perCol {
					nz = max(1, tc.n)
				}

				// uint8 B.
				bu := make([]uint8, br*ldb)
				fillU8(r, bu, tc.extremes)
				zbu := make([]uint8, nz)
				fillU8(r, zbu, tc.extremes)
				want := refMatMulInteger(tc.m, tc.n, tc.k, a, lda, za, tc.transB, bu, ldb, zbu)
				c := make([]int32, tc.m*ldc)
				for i := range c {
					c[i] = -7 // sentinel: padding must survive
				}
				e.GemmU8(tc.m, a, lda, za, PackU8(tc.transB, tc.k, tc.n, bu, ldb, zbu), c, ldc)
				compareInt(t, fmt.Sprintf("%+v u8 packed", tc), c, ldc, want, tc.m, tc.n)
				e.MatMulIntegerU8(tc.m, tc.n, tc.k, a, lda, za, tc.transB, bu, ldb, zbu, c, ldc)
				compareInt(t, fmt.Sprintf("%+v u8 one-shot", tc), c, ldc, want, tc.m, tc.n)
				checkGemmU8F32(t, r, e, tc, a, lda, za, PackU8(tc.transB, tc.k, tc.n, bu, ldb, zbu), want, ldc)

				// int8 B: reinterpret with the signed zero point range.
				bs := make([]int8, len(bu))
				for i, v := range bu {
					bs[i] = int8(v)
				}
				zbs := make([]int8, nz)
				for i := range zbs {
					zbs[i] = int8(r.IntN(256) - 128)
				}
				if tc.extremes {
					for i := range bs {
						bs[i] = []int8{-128, 127}[r.IntN(2)]
					}
					for i := range zbs {
						zbs[i] = 127
					}
				}
				want = refMatMulInteger(tc.m, tc.n, tc.k, a, lda, za, tc.transB, bs, ldb, zbs)
				e.GemmU8(tc.m, a, lda, za, PackS8(tc.transB, tc.k, tc.n, bs, ldb, zbs), c, ldc)
				compareInt(t, fmt.Sprintf("%+v s8 packed", tc), c, ldc, want, tc.m, tc.n)
				e.MatMulIntegerS8(tc.m, tc.n, tc.k, a, lda, za, tc.transB, bs, ldb, zbs, c, ldc)
				compareInt(t, fmt.Sprintf("%+v s8 one-shot", tc), c, ldc, want, tc.m, tc.n)
			}
		})
	}
}

func compareInt(t *testing.T, what string, c []int32, ldc int, want []int64, m, n int) {
	t.Helper()
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= n {
				if got != -7 {
					t.Fatalf("%s: padding C[%d,%d] overwritten with %d", what, i, j, got)
				}
				continue
			}
			if int64(got) != want[i*n+j] {
				t.Fatalf("%s: C[%d,%d] = %d, want %d", what, i, j, got, want[i*n+j])
			}
		}
	}
}

func TestGemmU8AllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops entries under the race detector; run without -race")
	}
	r := rand.New(rand.NewPCG(13, 14))
	const m, n, k = 100, 96, 200
	a, w := make([]uint8, m*k), make([]uint8, n*k)
	fillU8(r, a, false)
	fillU8(r, w, false)
	c := make([]int32, m*n)
	for name, e := range intEngines(t) {
		qb := PackU8(true, k, n, w, k, []uint8{128})
		e.GemmU8(m, a, k, 3, qb, c, n)
		e.MatMulIntegerU8(m, n, k, a, k, 3, true, w, k, []uint8{128}, c, n)
		if allocs := testing.AllocsPerRun(20, func() { e.GemmU8(m, a, k, 3, qb, c, n) }); allocs >= 1 {
			t.Errorf("%s: GemmU8 makes %.1f allocations per call", name, allocs)
		}
		cf, scaleB, bias := make([]float32, m*n), []float32{0.5}, make([]float32, n)
		e.GemmU8F32(m, a, k, 3, 0.25, qb, scaleB, bias, cf, n)
		if allocs := testing.AllocsPerRun(20, func() { e.GemmU8F32(m, a, k, 3, 0.25, qb, scaleB, bias, cf, n) }); allocs >= 1 {
			t.Errorf("%s: GemmU8F32 makes %.1f allocations per call", name, allocs)
		}
		if allocs := testing.AllocsPerRun(20, func() {
			e.MatMulIntegerU8(m, n, k, a, k, 3, true, w, k, []uint8{128}, c, n)
		}); allocs >= 1 {
			t.Errorf("%s: MatMulIntegerU8 makes %.1f allocations per call", name, allocs)
		}
	}
}

func TestPackBRejectsBadZeroPoints(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("PackU8 with 2 zero points for 3 columns did not panic")
		}
	}()
	PackU8(false, 2, 3, make([]uint8, 6), 3, []uint8{1, 2})
}

// checkGemmU8F32 runs the fused dequantizing product and requires the exact
// float32 result of Cast → Mul(scaleA·scaleB) → Add(bias) on the exact
// integer product.
func checkGemmU8F32(t *testing.T, r *rand.Rand, e *Engine, tc intCase, a []uint8, lda int, za uint8, qb *QuantB, want []int64, ldc int) {
	t.Helper()
	scaleA := float32(r.Float64()*0.1 + 1e-3)
	scaleB := []float32{float32(r.Float64()*0.1 + 1e-3)}
	if tc.perCol {
		scaleB = make([]float32, tc.n)
		for i := range scaleB {
			scaleB[i] = float32(r.Float64()*0.1 + 1e-3)
		}
	}
	var bias []float32
	if tc.m%2 == 1 {
		bias = randSlice(r, tc.n)
	}
	c := make([]float32, tc.m*ldc)
	for i := range c {
		c[i] = -7
	}
	e.GemmU8F32(tc.m, a, lda, za, scaleA, qb, scaleB, bias, c, ldc)
	for i := 0; i < tc.m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= tc.n {
				if got != -7 {
					t.Fatalf("%+v f32: padding C[%d,%d] overwritten", tc, i, j)
				}
				continue
			}
			sb := scaleB[0]
			if tc.perCol {
				sb = scaleB[j]
			}
			w := float32(float32(want[i*tc.n+j]) * (scaleA * sb))
			if bias != nil {
				w += bias[j]
			}
			if got != w {
				t.Fatalf("%+v f32: C[%d,%d] = %v, want %v", tc, i, j, got, w)
			}
		}
	}
}
