package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBLASEngineRunsVectorProductsInGo checks that an engine with a system
// BLAS still sends products with one row or one column of C to the Go
// vector path: OpenBLAS's sgemm packs all of B first, which for a decoder's
// logits ([1, d] × [vocab, d]ᵀ) costs a copy of the embedding table per
// token. Both engines then run the same code, so the results are bitwise
// equal (BLAS's own summation order would differ in the last bits).
func TestBLASEngineRunsVectorProductsInGo(t *testing.T) {
	blas, err := LoadBLAS(2)
	if err != nil {
		t.Skipf("no BLAS to test (install libopenblas0-pthread): %v", err)
	}
	gov, err := NewGo(2, blas.kern.name)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		transA, transB bool
		m, n, k        int
	}{
		{false, true, 1, 3001, 384}, // logits: row × weightᵀ
		{false, false, 1, 777, 300},
		{true, false, 513, 1, 200},
		{false, true, 129, 1, 64},
	} {
		ar, ac := c.m, c.k
		if c.transA {
			ar, ac = c.k, c.m
		}
		br, bc := c.k, c.n
		if c.transB {
			br, bc = c.n, c.k
		}
		a, b := randSlice(r, ar*ac), randSlice(r, br*bc)
		got, want := make([]float32, c.m*c.n), make([]float32, c.m*c.n)
		blas.SGEMM(c.transA, c.transB, c.m, c.n, c.k, 1, a, ac, b, bc, 0, got, c.n)
		gov.SGEMM(c.transA, c.transB, c.m, c.n, c.k, 1, a, ac, b, bc, 0, want, c.n)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: element %d is %v on %s, %v on the Go path: the vector product did not run in Go", c, i, got[i], blas.Path(), want[i])
			}
		}
	}
}

// TestAxpy8MatchesAxpy checks the combination form's eight-row kernel
// against eight axpy calls in a row, bit for bit (the gemv's results must
// not depend on which ran), at widths around its 16-column blocks and with
// rows of several strides.
func TestAxpy8MatchesAxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var s [8]float32
	for _, c := range []struct{ n, pad int }{{1, 0}, {15, 3}, {16, 0}, {17, 1}, {128, 0}, {1500, 0}, {333, 64}} {
		ldx := c.n + c.pad
		x := randSlice(r, 7*ldx+c.n)
		y0 := randSlice(r, c.n+5)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		want := append([]float32(nil), y0...)
		for i := range s {
			axpy(s[i], x[i*ldx:i*ldx+c.n], want)
		}
		got := append([]float32(nil), y0...)
		if !axpy8(&s, x, ldx, got[:c.n]) {
			t.Skip("no AVX-512 form of axpy8 on this CPU")
		}
		for j := range got {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("n=%d ldx=%d: y[%d] = %v, eight axpys give %v", c.n, ldx, j, got[j], want[j])
			}
		}
	}
}
