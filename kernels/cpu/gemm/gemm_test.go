package gemm

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// testEngines returns every SGEMM path this machine can run: each Go kernel
// on one, two and three threads (three exercises uneven task splits), and the
// system BLAS when it loads.
func testEngines(t testing.TB) map[string]*Engine {
	t.Helper()
	es := map[string]*Engine{}
	for _, name := range GoKernels() {
		for _, threads := range []int{1, 2, 3} {
			e, err := NewGo(threads, name)
			if err != nil {
				t.Fatal(err)
			}
			es[fmt.Sprintf("%s/%dt", name, threads)] = e
		}
	}
	if e, err := LoadBLAS(0); err == nil {
		es["blas"] = e
	} else {
		t.Logf("BLAS path not tested: %v", err)
	}
	return es
}

// refSGEMM computes the product in float64 and, per element, the bound
// Σ|alpha·a·b| + |beta·c| that scales the rounding error of a float32
// evaluation.
func refSGEMM(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, mag []float64) {
	want = make([]float64, m*n)
	mag = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, sa float64
			if alpha != 0 {
				for p := 0; p < k; p++ {
					var av, bv float32
					if transA {
						av = a[p*lda+i]
					} else {
						av = a[i*lda+p]
					}
					if transB {
						bv = b[j*ldb+p]
					} else {
						bv = b[p*ldb+j]
					}
					s += float64(av) * float64(bv)
					sa += math.Abs(float64(av) * float64(bv))
				}
			}
			v := float64(alpha) * s
			g := math.Abs(float64(alpha)) * sa
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
				g += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
			want[i*n+j], mag[i*n+j] = v, g
		}
	}
	return want, mag
}

func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

type sgemmCase struct {
	transA, transB bool
	m, n, k        int
	pad            int // extra elements per row of A, B and C
	alpha, beta    float32
}

func (tc sgemmCase) String() string {
	return fmt.Sprintf("tA=%v,tB=%v,m=%d,n=%d,k=%d,pad=%d,alpha=%g,beta=%g", tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.pad, tc.alpha, tc.beta)
}

// sgemmCases covers every transpose combination over sizes around the
// kernels' register tiles (4, 6, 12 rows; 4, 16, 32 columns), depth blocks
// (256, 384) and the degenerate 0 and 1, with and without padded strides and
// with the special alpha/beta values BLAS treats apart.
func sgemmCases() []sgemmCase {
	var cs []sgemmCase
	sizes := [][3]int{
		{0, 5, 3}, {5, 0, 3}, {4, 5, 0}, {1, 1, 1}, {1, 37, 19}, {29, 1, 19},
		{2, 3, 1}, {7, 5, 3}, {12, 32, 8}, {13, 33, 17}, {25, 47, 65},
		{6, 16, 257}, {37, 70, 400}, {100, 129, 31},
	}
	ab := [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}, {0, 0.5}, {2.5, 0}}
	x := 0
	for _, s := range sizes {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				v := ab[x%len(ab)]
				cs = append(cs, sgemmCase{ta, tb, s[0], s[1], s[2], x % 3 * 2, v[0], v[1]})
				x++
			}
		}
	}
	// Beyond the row block of every kernel (mc = 512 / 1920) and the column
	// block (nc = 512), kept thin so the test stays fast.
	cs = append(cs,
		sgemmCase{false, false, 1930, 9, 5, 0, 1, 0.5},
		sgemmCase{true, true, 530, 7, 3, 1, 1, 0},
		sgemmCase{false, true, 5, 1030, 6, 0, -1, 1},
		sgemmCase{true, false, 3, 700, 770, 2, 1, 0},
		// Vector products large enough to be split over threads.
		sgemmCase{false, true, 1, 5000, 500, 0, 1, 0.5},
		sgemmCase{true, false, 1, 5000, 500, 3, 1, 0},
		sgemmCase{false, false, 4100, 1, 600, 1, -1, 1},
		sgemmCase{true, true, 4100, 1, 600, 0, 1, 0},
	)
	return cs
}

func TestSGEMMMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	engines := testEngines(t)
	names := slices.Sorted(maps.Keys(engines))
	for _, tc := range sgemmCases() {
		// One set of inputs and one float64 reference per case, shared by
		// every path.
		ar, ac := tc.m, tc.k
		if tc.transA {
			ar, ac = tc.k, tc.m
		}
		br, bc := tc.k, tc.n
		if tc.transB {
			br, bc = tc.n, tc.k
		}
		lda, ldb, ldc := max(ac+tc.pad, 1), max(bc+tc.pad, 1), max(tc.n+tc.pad, 1)
		a := randSlice(r, ar*lda)
		b := randSlice(r, br*ldb)
		c0 := randSlice(r, tc.m*ldc)
		if tc.beta == 0 {
			// BLAS semantics: C is not read when beta == 0.
			for i := range c0 {
				c0[i] = float32(math.NaN())
			}
		}
		want, mag := refSGEMM(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c0, ldc)
		for _, name := range names {
			c := slices.Clone(c0)
			engines[name].SGEMM(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
			compareSGEMM(t, name+" "+tc.String(), c, c0, ldc, want, mag, tc.m, tc.n, tc.k)
		}
	}
}

// compareSGEMM checks C against the float64 reference with the rounding
// bound of a float32 evaluation with k products and a final fma: each term
// picks up at most (k+2) unit roundoffs. Padding columns must be untouched.
func compareSGEMM(t *testing.T, what string, c, orig []float32, ldc int, want, mag []float64, m, n, k int) {
	t.Helper()
	eps := float64(k+2) * 0x1p-23
	bad := 0
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= n {
				if math.Float32bits(got) != math.Float32bits(orig[i*ldc+j]) {
					t.Fatalf("%s: padding C[%d,%d] changed to %v", what, i, j, got)
				}
				continue
			}
			w, g := want[i*n+j], mag[i*n+j]
			if d := math.Abs(float64(got) - w); !(d <= eps*g+1e-30) {
				if bad++; bad <= 3 {
					t.Errorf("%s: C[%d,%d] = %v, want %v (|diff| %.3g > bound %.3g)", what, i, j, got, w, d, eps*g)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d wrong elements", what, bad)
	}
}

func TestSGEMMNaNPropagates(t *testing.T) {
	const m, n, k = 30, 40, 50
	for name, e := range testEngines(t) {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			a, b := randSlice(r, m*k), randSlice(r, k*n)
			a[7*k+11] = float32(math.NaN())   // row 7 of C
			b[20*n+33] = float32(math.Inf(1)) // column 33, finite elsewhere
			c := make([]float32, m*n)
			e.SGEMM(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					v := float64(c[i*n+j])
					switch {
					case i == 7 && !math.IsNaN(v):
						t.Fatalf("C[7,%d] = %v, want NaN from A[7,11]", j, v)
					case i != 7 && j == 33 && !math.IsInf(v, 0) && !math.IsNaN(v):
						t.Fatalf("C[%d,33] = %v, want ±Inf from B[20,33]", i, v)
					case i != 7 && j != 33 && (math.IsNaN(v) || math.IsInf(v, 0)):
						t.Fatalf("C[%d,%d] = %v, want finite", i, j, v)
					}
				}
			}
		})
	}
}

func TestSGEMMStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const batch, m, n, k = 5, 23, 19, 40
	for name, e := range testEngines(t) {
		t.Run(name, func(t *testing.T) {
			for _, shareB := range []bool{false, true} {
				a := randSlice(r, batch*m*k)
				strideB := k * n
				if shareB {
					strideB = 0
				}
				b := randSlice(r, max(1, batch*strideB+k*n))
				c := randSlice(r, batch*m*n)
				cw := append([]float32(nil), c...)
				e.SGEMMStrided(false, true, m, n, k, 0.75, a, k, m*k, b, k, strideB, 0.5, c, n, m*n, batch)
				for i := 0; i < batch; i++ {
					want, mag := refSGEMM(false, true, m, n, k, 0.75, a[i*m*k:], k, b[i*strideB:], k, 0.5, cw[i*m*n:], n)
					for x := range want {
						if d := math.Abs(float64(c[i*m*n+x]) - want[x]); d > float64(k+2)*0x1p-23*mag[x] {
							t.Fatalf("shareB=%v batch %d elem %d: got %v want %v", shareB, i, x, c[i*m*n+x], want[x])
						}
					}
				}
			}
		})
	}
}

func TestSGEMMBadArgumentsPanic(t *testing.T) {
	e, err := NewGo(1, "go")
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := make([]float32, 12), make([]float32, 12), make([]float32, 9)
	cases := []struct {
		name, want string
		call       func()
	}{
		{"negative m", "negative dimension", func() { e.SGEMM(false, false, -1, 3, 4, 1, a, 4, b, 3, 0, c, 3) }},
		{"short lda", "lda = 3", func() { e.SGEMM(false, false, 3, 3, 4, 1, a, 3, b, 3, 0, c, 3) }},
		{"short ldb trans", "ldb = 3", func() { e.SGEMM(false, true, 3, 3, 4, 1, a, 4, b, 3, 0, c, 3) }},
		{"short a", "len(a) = 11", func() { e.SGEMM(false, false, 3, 3, 4, 1, a[:11], 4, b, 3, 0, c, 3) }},
		{"short c", "len(c) = 8", func() { e.SGEMM(false, false, 3, 3, 4, 1, a, 4, b, 3, 0, c[:8], 3) }},
		{"overlapping batch", "overlaps", func() {
			e.SGEMMStrided(false, false, 3, 3, 4, 1, a, 4, 0, b, 3, 0, 0, c, 3, 4, 2)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Fatalf("panic %v, want one mentioning %q", r, tc.want)
				}
			}()
			tc.call()
		})
	}
}

func TestGoPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops entries under the race detector; run without -race")
	}
	r := rand.New(rand.NewPCG(7, 8))
	const m, n, k = 200, 300, 260
	a, b, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
	for _, name := range GoKernels() {
		e, err := NewGo(2, name)
		if err != nil {
			t.Fatal(err)
		}
		e.SGEMM(false, true, m, n, k, 1, a, k, b, k, 0, c, n) // fill the pool
		allocs := testing.AllocsPerRun(20, func() {
			e.SGEMM(false, true, m, n, k, 1, a, k, b, k, 0, c, n)
		})
		// sync.Pool may drop an entry at a GC; anything above that is a
		// per-call allocation.
		if allocs >= 1 {
			t.Errorf("%s: %.1f allocations per SGEMM, want 0", name, allocs)
		}
		// A strided vector product uses the gemv scratch.
		e.SGEMM(true, false, 1, n, k, 1, a, m, b, n, 0, c, n)
		allocs = testing.AllocsPerRun(20, func() {
			e.SGEMM(true, false, 1, n, k, 1, a, m, b, n, 0, c, n)
		})
		if allocs >= 1 {
			t.Errorf("%s: %.1f allocations per vector product, want 0", name, allocs)
		}
	}
}

func TestPathNamesTheChoice(t *testing.T) {
	t.Setenv("FORGE_BLAS", "off")
	e := newDefault()
	if p := e.Path(); !strings.HasPrefix(p, GoKernels()[0]) || !strings.Contains(p, "FORGE_BLAS=off") {
		t.Errorf("FORGE_BLAS=off: Path() = %q, want the best Go kernel and the reason", p)
	}
	if e.blas != nil {
		t.Error("FORGE_BLAS=off still loaded BLAS")
	}
	t.Setenv("FORGE_BLAS", "/nonexistent/libnothing.so")
	e = newDefault()
	// Platforms without a loader say so instead of naming the library.
	if p := e.Path(); !strings.Contains(p, "no BLAS") || !strings.Contains(p, "libnothing") && !strings.Contains(p, "no BLAS loader") {
		t.Errorf("missing library: Path() = %q, want the Go path and the failed library named", p)
	}
	if _, err := NewGo(1, "go-sparc"); err == nil {
		t.Error("NewGo accepted an unknown kernel")
	}
	if be, err := LoadBLAS(2); err == nil {
		if p := be.Path(); !strings.Contains(p, "2 threads") || !strings.Contains(p, be.blas.lib) {
			t.Errorf("BLAS Path() = %q", p)
		}
	}
}

// TestPackPanel checks panel packing, including the SIMD transpose path, on
// every kernel width, partial panels and depths around its 16-wide blocks.
func TestPackPanel(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, w := range []int{4, 6, 8, 12, 16, 32} {
		for _, rows := range []int{w, w - 1, 1, (w + 1) / 2} {
			for _, depth := range []int{1, 15, 16, 17, 40, 64} {
				for _, trans := range []bool{false, true} {
					const r0, p0, pad = 3, 5, 7
					ld := r0 + w + p0 + depth + pad
					x := randSlice(r, (r0+w+p0+depth+1)*ld)
					dst := randSlice(r, w*depth)
					packPanel(dst, w, rows, depth, x, ld, r0, p0, trans)
					for p := 0; p < depth; p++ {
						for i := 0; i < w; i++ {
							var want float32
							if i < rows {
								if trans {
									want = x[(p0+p)*ld+r0+i]
								} else {
									want = x[(r0+i)*ld+p0+p]
								}
							}
							if got := dst[p*w+i]; got != want {
								t.Fatalf("w=%d rows=%d depth=%d trans=%v: dst[p=%d, r=%d] = %v, want %v", w, rows, depth, trans, p, i, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestConcurrentCalls runs products from several goroutines at once on each
// engine: pooled scratch must never be shared between calls, and the BLAS
// library must tolerate concurrent callers.
func TestConcurrentCalls(t *testing.T) {
	const m, n, k, callers = 70, 90, 130, 4
	r := rand.New(rand.NewPCG(15, 16))
	a, b := randSlice(r, m*k), randSlice(r, k*n)
	want, mag := refSGEMM(false, false, m, n, k, 1, a, k, b, n, 0, nil, n)
	for name, e := range testEngines(t) {
		var wg sync.WaitGroup
		results := make([][]float32, callers)
		for g := range results {
			results[g] = make([]float32, m*n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					e.SGEMM(false, false, m, n, k, 1, a, k, b, n, 0, results[g], n)
				}
			}()
		}
		wg.Wait()
		for g, c := range results {
			compareSGEMM(t, fmt.Sprintf("%s caller %d", name, g), c, c, n, want, mag, m, n, k)
		}
	}
}

func TestIntPathNamesAKernel(t *testing.T) {
	e, err := NewGo(1, "")
	if err != nil {
		t.Fatal(err)
	}
	if p := e.IntPath(); p != igemmKernels()[0].name {
		t.Errorf("IntPath() = %q, want the best integer kernel %q", p, igemmKernels()[0].name)
	}
}

func TestBLASPathAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops entries under the race detector; run without -race")
	}
	e, err := LoadBLAS(0)
	if err != nil {
		t.Skipf("no BLAS to test (install libopenblas0-pthread): %v", err)
	}
	r := rand.New(rand.NewPCG(17, 18))
	const m, n, k = 40, 50, 60
	a, b, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
	e.SGEMM(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
	if allocs := testing.AllocsPerRun(50, func() { e.SGEMM(false, false, m, n, k, 1, a, k, b, n, 0, c, n) }); allocs >= 1 {
		t.Errorf("%s: %.1f allocations per SGEMM, want 0", e.Path(), allocs)
	}
}

func TestSGEMMPackedB(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	shapes := []struct {
		m, n, k        int
		transA, transB bool
	}{
		{55, 768, 768, false, true}, // a text encoder's linear layer
		{7, 33, 900, false, false},  // several depth blocks, odd n
		{40, 5, 3, true, true},
		{1, 70, 50, false, true}, // vector products read B in place
		{30, 1, 50, true, false},
		{130, 2100, 20, false, false},
	}
	for name, e := range testEngines(t) {
		for _, s := range shapes {
			lda := s.k
			if s.transA {
				lda = s.m
			}
			ldb := s.n + 2
			if s.transB {
				ldb = s.k + 1
			}
			a := randSlice(r, s.m*s.k)
			br := s.k
			if s.transB {
				br = s.n
			}
			b := randSlice(r, br*ldb)
			pb := e.PackB(s.transB, s.k, s.n, b, ldb)
			ldc := s.n + 3
			c := randSlice(r, s.m*ldc)
			c0 := append([]float32(nil), c...)
			want, mag := refSGEMM(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, c0, ldc)
			for rep := 0; rep < 2; rep++ { // the packing is reused
				e.SGEMMPackedB(s.transA, s.m, a, lda, pb, c, ldc)
				compareSGEMM(t, fmt.Sprintf("%s %+v", name, s), c, c0, ldc, want, mag, s.m, s.n, s.k)
			}
		}
	}
}

func TestDefaultPathOnAVX512(t *testing.T) {
	t.Setenv("FORGE_BLAS", "")
	e := newDefault()
	if GoKernels()[0] == "go-avx512" {
		if e.blas != nil || !strings.Contains(e.Path(), "default on AVX-512") {
			t.Errorf("AVX-512 CPU, FORGE_BLAS unset: Path() = %q, want the Go kernel as the default", e.Path())
		}
	}
	t.Setenv("FORGE_BLAS", "on")
	e = newDefault()
	if _, err := LoadBLAS(1); err == nil && e.blas == nil {
		t.Errorf("FORGE_BLAS=on: Path() = %q, want the system BLAS", e.Path())
	}
}

// TestShortMatchesBlocked holds a product with a packed B and at most
// shortRows micro-panels of A (one parallel phase, see short) to the
// blocked loop's sums, which an unpacked B takes: the same bits, for row
// counts around the kernel's panel height and the shortRows bound, and
// depths of one and several blocks.
func TestShortMatchesBlocked(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	e, err := NewGo(0, "")
	if err != nil {
		t.Fatal(err)
	}
	mr := e.kern.mr
	for _, tc := range []struct{ m, n, k int }{
		{mr + 1, 96, 768},
		{shortRows * mr, 768, 768},
		{shortRows*mr - 5, 200, 2048},
		{3, 50, 100},
	} {
		a := randSlice(r, tc.m*tc.k)
		b := randSlice(r, tc.n*tc.k) // [n, k]: used transposed
		pb := e.PackB(true, tc.k, tc.n, b, tc.k)
		got, want := make([]float32, tc.m*tc.n), make([]float32, tc.m*tc.n)
		e.SGEMMPackedB(false, tc.m, a, tc.k, pb, got, tc.n)
		e.SGEMM(false, true, tc.m, tc.n, tc.k, 1, a, tc.k, b, tc.k, 0, want, tc.n)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d×%d×%d: C[%d] = %v packed, %v blocked", tc.m, tc.n, tc.k, i, got[i], want[i])
			}
		}
	}
}
