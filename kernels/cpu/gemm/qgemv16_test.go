package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// int16Case is one LinearQ8Int16 product: A's rows scaled by mags (a row
// of zeros where a magnitude is 0, one outlier 1000× the rest where it is
// negative).
type int16Case struct {
	m, n, k, pad int
	signed       bool
	zq           int32
	mags         []float32
}

func (c int16Case) operands(r *rand.Rand) (a []float32, q []byte, lda, ldq, ldc int) {
	lda, ldq, ldc = c.k+c.pad, c.k+c.pad, c.n+c.pad
	a = randSlice(r, c.m*lda)
	for i := range c.m {
		mag := c.mags[i%len(c.mags)]
		row := a[i*lda : i*lda+c.k]
		for p := range row {
			row[p] *= abs32(mag)
		}
		if mag < 0 {
			row[r.IntN(c.k)] = 1000 * -mag
		}
	}
	q = make([]byte, c.n*ldq)
	for i := range q {
		q[i] = byte(r.IntN(256))
	}
	return a, q, lda, ldq, ldc
}

var int16Cases = []int16Case{
	{1, 1, 64, 0, false, 0, []float32{1}},
	{1, 7, 384, 0, false, 128, []float32{1}},
	{1, 131, 384, 5, true, -3, []float32{0.01}},
	{2, 64, 128, 0, true, 0, []float32{1, 0}},
	{3, 261, 512, 64, false, 255, []float32{1e-3, -1, 30}},
	{5, 200, 1536, 0, true, 127, []float32{2}},
	{1, 300, 2048, 0, true, -128, []float32{-0.5}},
	{2, 9, 4096, 0, false, 0, []float32{1, 1e6}},
	{4, 67, 64, 1, true, 50, []float32{1e-30, -3}},
}

// refInt16 is LinearQ8Int16 in Go on the same grid: quantizeInt16 and the
// integer sums of dotsInt16Go.
func refInt16(c int16Case, a []float32, lda int, q []byte, ldq int, scale float32) []float32 {
	zu := c.zq
	if c.signed {
		zu += 128
	}
	out := make([]float32, c.m*c.n)
	h, l, corr := make([]int8, c.k), make([]int8, c.k), make([]int32, int16Lanes)
	for i := range c.m {
		s, ok := quantizeInt16(a[i*lda:i*lda+c.k], h, l, corr, zu)
		if !ok {
			panic("non-finite test row")
		}
		dotsInt16Go(h, l, corr, q, ldq, c.signed, s*float64(scale), out[i*c.n:(i+1)*c.n])
	}
	return out
}

// TestLinearQ8Int16 checks the product on every engine against Go on the
// same 16-bit grid, bit for bit (the sums are exact integers, so any
// difference is a wrong lane, row, correction or offset), and against the
// float64 product on the unrounded A within the grid's bound:
// scale·Σ_p |q − zq|·s/2, plus the float32 rounding of the result.
func TestLinearQ8Int16(t *testing.T) {
	if Int16Path() == "" {
		t.Skip("no 8-bit dot-product unit: LinearQ8Int16 is LinearQ8 here (TestLinearQ8Int16Fallback)")
	}
	r := rand.New(rand.NewPCG(16, 17))
	const scale = 0.0173
	for _, c := range int16Cases {
		a, q, lda, ldq, ldc := c.operands(r)
		exact := refInt16(c, a, lda, q, ldq, scale)
		want, _ := refLinearQ8(c.m, c.n, c.k, a, lda, q, ldq, c.signed, c.zq, scale)
		for name, e := range testEngines(t) {
			got := make([]float32, c.m*ldc)
			for i := range got {
				got[i] = -42 // padding must stay
			}
			e.LinearQ8Int16(c.m, c.n, c.k, a, lda, q, ldq, c.signed, c.zq, scale, got, ldc)
			for i := range c.m {
				var mx float64
				for _, v := range a[i*lda : i*lda+c.k] {
					mx = max(mx, math.Abs(float64(v)))
				}
				step := mx / int16Max
				for j := range ldc {
					g := got[i*ldc+j]
					if j >= c.n {
						if g != -42 {
							t.Fatalf("%s %+v: padding C[%d,%d] changed to %v", name, c, i, j, g)
						}
						continue
					}
					if x := exact[i*c.n+j]; math.Float32bits(g) != math.Float32bits(x) {
						t.Fatalf("%s %+v: C[%d,%d] = %v, want %v (Go on the same grid)", name, c, i, j, g, x)
					}
					var wq float64
					for p := range c.k {
						wq += math.Abs(float64(qval(q[j*ldq+p], c.signed) - c.zq))
					}
					w := want[i*c.n+j]
					bound := scale*wq*step/2*(1+1e-9) + math.Abs(w)*0x1p-23
					if d := math.Abs(float64(g) - w); !(d <= bound) {
						t.Fatalf("%s %+v: C[%d,%d] = %v, float64 %v (|diff| %.3g > %.3g)", name, c, i, j, g, w, d, bound)
					}
				}
			}
		}
	}
}

// TestLinearQ8Int16Fallback checks that LinearQ8Int16 is LinearQ8's float32
// product, bit for bit, where it does not round A: a depth that is not a
// multiple of 64 or exceeds 4096, a row with an infinity or a NaN (which
// must reach C as LinearQ8 gives them), a CPU without the unit.
func TestLinearQ8Int16Fallback(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 19))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		m, n, k int
		poison  float32 // written into A[0, 0] when not 0
	}{{1, 70, 100, 0}, {2, 33, 4160, 0}, {2, 40, 384, inf}, {1, 40, 384, nan}, {3, 5, 64, -inf}} {
		a := randSlice(r, c.m*c.k)
		if c.poison != 0 {
			a[c.k*(c.m-1)] = c.poison
		}
		q := make([]byte, c.n*c.k)
		for i := range q {
			q[i] = byte(r.IntN(256))
		}
		e, err := NewGo(2, GoKernels()[0])
		if err != nil {
			t.Fatal(err)
		}
		want, got := make([]float32, c.m*c.n), make([]float32, c.m*c.n)
		e.LinearQ8(c.m, c.n, c.k, a, c.k, q, c.k, true, 5, 0.25, want, c.n)
		e.LinearQ8Int16(c.m, c.n, c.k, a, c.k, q, c.k, true, 5, 0.25, got, c.n)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: C[%d] = %v, LinearQ8 gives %v", c, i, got[i], want[i])
			}
		}
	}
}

// TestQuantizeInt16 checks the grid: every element within half a step of
// its multiple, the largest magnitude at ±int16Max, the split exact, and
// the lane corrections the zero point times each lane's sum.
func TestQuantizeInt16(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 21))
	for _, k := range []int{64, 128, 384} {
		x := randSlice(r, k)
		x[r.IntN(k)] = -7.5 // the largest magnitude, negative
		h, l, corr := make([]int8, k), make([]int8, k), make([]int32, int16Lanes)
		s, ok := quantizeInt16(x, h, l, corr, 133)
		if !ok || s != 7.5/int16Max {
			t.Fatalf("k=%d: s = %v, ok %v; want %v", k, s, ok, 7.5/int16Max)
		}
		var lanes [int16Lanes]int32
		for p, v := range x {
			xi := 256*int32(h[p]) + int32(l[p])
			if d := math.Abs(float64(v) - float64(xi)*s); d > s/2*(1+1e-9) {
				t.Fatalf("k=%d: x[%d] = %v on the grid %d·%v (off by %.3g steps)", k, p, v, xi, s, d/s)
			}
			if v == -7.5 && xi != -int16Max {
				t.Fatalf("k=%d: the largest magnitude maps to %d, want %d", k, xi, -int16Max)
			}
			lanes[p%64/4] += xi
		}
		for i := range lanes {
			if corr[i] != 133*lanes[i] {
				t.Fatalf("k=%d: corr[%d] = %d, want %d", k, i, corr[i], 133*lanes[i])
			}
		}
	}
}

func TestLinearQ8Int16AllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops entries under the race detector; run without -race")
	}
	e, err := NewGo(2, GoKernels()[0])
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(22, 23))
	const m, n, k = 2, 4096, 384
	a, q, c := randSlice(r, m*k), make([]byte, n*k), make([]float32, m*n)
	e.LinearQ8Int16(m, n, k, a, k, q, k, true, 3, 0.5, c, n)
	if allocs := testing.AllocsPerRun(20, func() { e.LinearQ8Int16(m, n, k, a, k, q, k, true, 3, 0.5, c, n) }); allocs >= 1 {
		t.Errorf("%.1f allocations per call, want 0", allocs)
	}
}

func TestLinearQ8Int16BadArgumentsPanic(t *testing.T) {
	a, q, c := make([]float32, 64), make([]byte, 128), make([]float32, 4)
	for _, f := range []func(){
		func() { Default().LinearQ8Int16(1, 2, 64, a, 64, q, 64, false, 256, 1, c, 2) }, // zero point out of range
		func() { Default().LinearQ8Int16(1, 3, 64, a, 64, q, 64, false, 0, 1, c, 3) },   // q too short
		func() { Default().LinearQ8Int16(1, 2, 64, a, 64, q, 64, false, 0, 1, c, 1) },   // ldc < n
	} {
		func() {
			defer func() {
				if msg := fmt.Sprint(recover()); msg == "<nil>" || !contains(msg, "LinearQ8Int16") && !contains(msg, "ld") && !contains(msg, "len") {
					t.Errorf("panic %q", msg)
				}
			}()
			f()
		}()
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
