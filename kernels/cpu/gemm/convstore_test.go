package gemm

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestConvWeightFrom checks that a weight rebuilt over a packing's words
// is the packing (every field, the words aliased, not copied) and
// convolves to the same bits, in every form this CPU has; and that words
// of the wrong size or alignment are refused.
func TestConvWeightFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	e := Default()
	for _, tc := range []struct {
		cout, cin, k int
		bf16         bool
	}{
		{1, 1, 1, false}, {13, 7, 3, false}, {64, 96, 7, false},
		{1, 1, 1, true}, {13, 7, 3, true}, {64, 96, 7, true}, {100, 257, 3, true},
	} {
		w := randSlice(r, tc.cout*tc.cin*tc.k)
		var cw *ConvWeight
		if tc.bf16 {
			cw = e.PackConvWeightBF16(tc.cout, tc.cin, tc.k, w)
		}
		if cw == nil {
			cw = e.PackConvWeight(tc.cout, tc.cin*tc.k, w, tc.cin*tc.k)
		}
		words := bytes.Clone(cw.Words())
		got, err := e.ConvWeightFrom(tc.cout, tc.cin, tc.k, tc.bf16, words)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if !reflect.DeepEqual(got, cw) {
			t.Fatalf("%+v: rebuilt weight %+v, packed %+v", tc, got, cw)
		}
		if &got.Words()[0] != &words[0] {
			t.Errorf("%+v: the rebuilt weight copied its words", tc)
		}
		shape := Conv1dShape{Cin: tc.cin, L: 50, K: tc.k, Stride: 1, Dilation: 1, PadLeft: tc.k / 2, Lout: 50}
		x := randSlice(r, tc.cin*50)
		y0, y1 := make([]float32, tc.cout*50), make([]float32, tc.cout*50)
		e.Conv1d(cw, shape, x, 50, y0, 50, nil)
		e.Conv1d(got, shape, x, 50, y1, 50, nil)
		if !reflect.DeepEqual(y0, y1) {
			t.Errorf("%+v: convolution over the rebuilt weight differs", tc)
		}
		if _, err := e.ConvWeightFrom(tc.cout, tc.cin, tc.k, tc.bf16, words[:len(words)-4]); err == nil {
			t.Errorf("%+v: short words accepted", tc)
		}
		if _, err := e.ConvWeightFrom(tc.cout, tc.cin, tc.k+1, tc.bf16, words); err == nil {
			t.Errorf("%+v: words of another shape accepted", tc)
		}
		odd := make([]byte, len(words)+1)
		if _, err := e.ConvWeightFrom(tc.cout, tc.cin, tc.k, tc.bf16, odd[1:]); err == nil {
			t.Errorf("%+v: unaligned words accepted", tc)
		}
	}
	if _, err := e.ConvWeightFrom(0, 1, 1, false, nil); err == nil {
		t.Error("an empty shape accepted")
	}
}

// TestPackedBFrom checks that a GEMM operand rebuilt over a packing's
// words is the packing, aliasing the words, with the same products; and
// that words of the wrong size are refused.
func TestPackedBFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	e := Default()
	for _, tc := range []struct {
		k, n  int
		trans bool
	}{
		{1, 1, false}, {17, 33, false}, {64, 200, true}, {300, 7, true},
	} {
		ldb := tc.n
		if tc.trans {
			ldb = tc.k
		}
		b := randSlice(r, tc.k*tc.n)
		p := e.PackB(tc.trans, tc.k, tc.n, b, ldb)
		words := bytes.Clone(p.Words())
		got, err := e.PackedBFrom(tc.trans, tc.k, tc.n, b, ldb, words)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("%+v: rebuilt operand differs from the packing", tc)
		}
		if &got.Words()[0] != &words[0] {
			t.Errorf("%+v: the rebuilt operand copied its words", tc)
		}
		const m = 5
		a := randSlice(r, m*tc.k)
		c0, c1 := make([]float32, m*tc.n), make([]float32, m*tc.n)
		e.SGEMMPackedB(false, m, a, tc.k, p, c0, tc.n)
		e.SGEMMPackedB(false, m, a, tc.k, got, c1, tc.n)
		if !reflect.DeepEqual(c0, c1) {
			t.Errorf("%+v: products over the rebuilt operand differ", tc)
		}
		if _, err := e.PackedBFrom(tc.trans, tc.k+1, tc.n, b, ldb, words); err == nil {
			t.Errorf("%+v: words of another shape accepted", tc)
		}
	}
}
