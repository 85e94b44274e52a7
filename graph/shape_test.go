package graph_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

func TestViews(t *testing.T) {
	a := kerneltest.Seq(2, 3, 4)
	h := newHarness(t)
	x := h.in(a)
	vals := h.eval(
		x.Permute(2, 0, 1),                               // 0
		x.Transpose(0, 2).Reshape(4, 6),                  // 1: reshape of a strided view copies
		x.SliceStep(2, 1, 4, 2),                          // 2
		x.Slice(1, -2, 100),                              // 3
		x.Narrow(0, 1, 1).Squeeze(0),                     // 4
		x.Slice(2, 0, 1).Expand(graph.Shape{3, 2, 3, 5}), // 5
		x.Unsqueeze(1).Reshape(-1, 12),                   // 6
		x.Permute(1, 0, 2).Add(x.Permute(1, 0, 2)),       // 7
		x.Slice(2, 3, 3),                                 // 8: empty
		x.Flatten(1, 2),                                  // 9
	)
	closeTo(t, "permute", vals[0], kerneltest.Permute(a, 2, 0, 1), 0)
	closeTo(t, "transpose+reshape", vals[1], kerneltest.Permute(a, 2, 1, 0).Reshape(4, 6), 0)
	want := kerneltest.NewND(2, 3, 2)
	for i := range want.Data {
		idx := kerneltest.Unravel(i, want.Shape)
		want.Data[i] = a.Data[idx[0]*12+idx[1]*4+1+2*idx[2]]
	}
	closeTo(t, "slice step", vals[2], want, 0)
	want = kerneltest.NewND(2, 2, 4)
	for i := range want.Data {
		idx := kerneltest.Unravel(i, want.Shape)
		want.Data[i] = a.Data[idx[0]*12+(idx[1]+1)*4+idx[2]]
	}
	closeTo(t, "slice negative", vals[3], want, 0)
	closeTo(t, "narrow+squeeze", vals[4], kerneltest.ND{Shape: []int{3, 4}, Data: a.Data[12:]}, 0)
	want = kerneltest.NewND(3, 2, 3, 5)
	for i := range want.Data {
		idx := kerneltest.Unravel(i, want.Shape)
		want.Data[i] = a.Data[idx[1]*12+idx[2]*4]
	}
	closeTo(t, "expand", vals[5], want, 0)
	closeTo(t, "unsqueeze+reshape", vals[6], a.Reshape(2, 12), 0)
	p := kerneltest.Permute(a, 1, 0, 2)
	for i := range p.Data {
		p.Data[i] *= 2
	}
	closeTo(t, "strided add", vals[7], p, 0)
	if !vals[8].Shape.Equal(graph.Shape{2, 3, 0}) {
		t.Errorf("empty slice shape %v", vals[8].Shape)
	}
	closeTo(t, "flatten", vals[9], a.Reshape(2, 12), 0)
}

func TestConcatSplitChunk(t *testing.T) {
	a, b := kerneltest.Seq(2, 3), kerneltest.Seq(2, 5)
	for i := range b.Data {
		b.Data[i] += 100
	}
	h := newHarness(t)
	x, y := h.in(a), h.in(b)
	cat := graph.Concat(1, x, y, x.Slice(1, 0, 1))
	parts := cat.Split(1, 4, 5)
	ch := y.T().Chunk(0, 5)
	vals := h.eval(cat, parts[1], ch[3], graph.Concat(0, x.T(), y.T()))
	want := kerneltest.NewND(2, 9)
	for r := 0; r < 2; r++ {
		copy(want.Data[r*9:], a.Data[r*3:r*3+3])
		copy(want.Data[r*9+3:], b.Data[r*5:r*5+5])
		want.Data[r*9+8] = a.Data[r*3]
	}
	closeTo(t, "concat", vals[0], want, 0)
	want2 := kerneltest.NewND(2, 5)
	for r := 0; r < 2; r++ {
		copy(want2.Data[r*5:], want.Data[r*9+4:r*9+9])
	}
	closeTo(t, "split", vals[1], want2, 0)
	closeTo(t, "chunk", vals[2], kerneltest.ND{Shape: []int{1, 2}, Data: []float64{103, 108}}, 0)
	want3 := kerneltest.NewND(8, 2)
	copy(want3.Data, kerneltest.Permute(a, 1, 0).Data)
	copy(want3.Data[6:], kerneltest.Permute(b, 1, 0).Data)
	closeTo(t, "concat of transposes", vals[3], want3, 0)
}

func TestGatherRepeatPadCumsum(t *testing.T) {
	a := kerneltest.Seq(4, 3)
	h := newHarness(t)
	g := h.g
	x := h.in(a)
	idx := g.ConstI64(graph.Shape{2, 2}, []int64{3, 0, -1, 1})
	counts := g.ConstI64(graph.Shape{4}, []int64{2, 0, 1, 3})
	vals := h.eval(
		x.Gather(0, idx), // 0: [2,2,3]
		x.IndexSelect(1, g.ConstI64(graph.Shape{2}, []int64{2, 0})), // 1
		x.RepeatInterleave(counts, 0, 6),                            // 2
		x.Pad1d(kernels.PadReflect, 2, 1),                           // 3
		x.Pad1d(kernels.PadReplicate, 1, 2),                         // 4
		x.Pad(kernels.PadConstant, -1, []int{1, 0}, []int{0, 1}),    // 5
		x.Cumsum(0, false, false),                                   // 6
		x.Cumsum(1, true, true),                                     // 7
		g.Arange(0, 1, 5, graph.I64).Cumsum(0, false, false),        // 8
	)
	closeTo(t, "gather", vals[0], kerneltest.ND{Shape: []int{2, 2, 3}, Data: []float64{9, 10, 11, 0, 1, 2, 9, 10, 11, 3, 4, 5}}, 0)
	closeTo(t, "index_select", vals[1], kerneltest.ND{Shape: []int{4, 2}, Data: []float64{2, 0, 5, 3, 8, 6, 11, 9}}, 0)
	closeTo(t, "repeat_interleave", vals[2], kerneltest.ND{Shape: []int{6, 3}, Data: []float64{0, 1, 2, 0, 1, 2, 6, 7, 8, 9, 10, 11, 9, 10, 11, 9, 10, 11}}, 0)
	closeTo(t, "pad reflect", vals[3], kerneltest.ND{Shape: []int{4, 6}, Data: []float64{2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4, 8, 7, 6, 7, 8, 7, 11, 10, 9, 10, 11, 10}}, 0)
	closeTo(t, "pad replicate", vals[4], kerneltest.ND{Shape: []int{4, 6}, Data: []float64{0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 5, 5, 6, 6, 7, 8, 8, 8, 9, 9, 10, 11, 11, 11}}, 0)
	closeTo(t, "pad constant", vals[5], kerneltest.ND{Shape: []int{5, 4}, Data: []float64{-1, -1, -1, -1, 0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1}}, 0)
	closeTo(t, "cumsum", vals[6], kerneltest.ND{Shape: []int{4, 3}, Data: []float64{0, 1, 2, 3, 5, 7, 9, 12, 15, 18, 22, 26}}, 0)
	closeTo(t, "cumsum exclusive reverse", vals[7], kerneltest.ND{Shape: []int{4, 3}, Data: []float64{3, 2, 0, 9, 5, 0, 15, 8, 0, 21, 11, 0}}, 0)
	closeTo(t, "cumsum i64", vals[8], kerneltest.ND{Shape: []int{5}, Data: []float64{0, 1, 3, 6, 10}}, 0)
	if vals[8].DType != graph.I64 {
		t.Errorf("cumsum of i64 gave %s", vals[8].DType)
	}
}

func TestRunTimeIndexErrors(t *testing.T) {
	h := newHarness(t)
	g := h.g
	x := h.in(kerneltest.Seq(4, 3))
	if _, err := h.eng.Eval(t.Context(), x.Gather(0, g.ConstI64(graph.Shape{1}, []int64{4}))); err == nil {
		t.Error("gather index 4 of 4 rows: no error")
	}
	if _, err := h.eng.Eval(t.Context(), x.RepeatInterleave(g.ConstI64(graph.Shape{4}, []int64{1, 1, 1, 1}), 0, 5)); err == nil {
		t.Error("repeat_interleave with a wrong total: no error")
	}
	if _, err := h.eng.Eval(t.Context(), x.RepeatInterleave(g.ConstI64(graph.Shape{4}, []int64{3, -1, 1, 1}), 0, 4)); err == nil {
		t.Error("repeat_interleave with a negative count: no error")
	}
}

func TestQuantizedOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const M, K, N = 7, 33, 5
	xa := kerneltest.RandND(rng, -3, 2, M, K).Round32()
	h := newHarness(t)
	g := h.g
	x := h.in(xa)
	q, scale, zp := x.DynamicQuantize()
	wq := make([]byte, N*K)
	for i := range wq {
		wq[i] = byte(rng.IntN(256))
	}
	w := g.Const(graph.U8, graph.Shape{N, K}, wq)
	wzp := g.Const(graph.U8, graph.Shape{}, []byte{131})
	y := q.MatMulInteger(w.T(), zp, wzp)
	// The same weight fed at run time takes the unpacked path.
	y2 := q.MatMulInteger(g.InputBytes("w", graph.U8, graph.Shape{N, K}, wq).T(), zp, wzp)
	vals := h.eval(q, scale, zp, y, y2)
	if got, want := vals[4].Float64s(), vals[3].Float64s(); !slices.Equal(got, want) {
		t.Fatalf("matmul_integer with a run-time weight differs from the packed one")
	}
	// DynamicQuantizeLinear by its definition.
	mn, mx := 0.0, 0.0
	for _, v := range xa.Data {
		mn, mx = min(mn, v), max(mx, v)
	}
	s := float32((mx - mn) / 255)
	if got := vals[1].F32()[0]; got != s {
		t.Fatalf("scale %v, want %v", got, s)
	}
	z := uint8(min(255, max(0, roundEven(float64(float32(-mn)/s)))))
	if got := vals[2].Data[0]; got != z {
		t.Fatalf("zero point %d, want %d", got, z)
	}
	qs := vals[0].Data
	for i, v := range xa.Data {
		want := uint8(min(255, max(0, roundEven(float64(float32(v)/s))+float64(z))))
		if qs[i] != want {
			t.Fatalf("q[%d] = %d, want %d (x=%v)", i, qs[i], want, v)
		}
	}
	got := vals[3]
	if got.DType != graph.I32 {
		t.Fatalf("matmul_integer dtype %s", got.DType)
	}
	gi := got.Float64s()
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var acc int64
			for k := 0; k < K; k++ {
				acc += (int64(qs[i*K+k]) - int64(z)) * (int64(wq[j*K+k]) - 131)
			}
			if gi[i*N+j] != float64(acc) {
				t.Fatalf("matmul_integer[%d,%d] = %v, want %d", i, j, gi[i*N+j], acc)
			}
		}
	}

	// ConvInteger1d against its definition (padding with the zero point).
	const Cin, Cout, L, Kk = 3, 4, 9, 3
	xq := make([]byte, Cin*L)
	wq2 := make([]byte, Cout*Cin*Kk)
	for i := range xq {
		xq[i] = byte(rng.IntN(256))
	}
	for i := range wq2 {
		wq2[i] = byte(rng.IntN(256))
	}
	h = newHarness(t)
	g = h.g
	cx := g.Const(graph.U8, graph.Shape{1, Cin, L}, xq)
	cw := g.Const(graph.U8, graph.Shape{Cout, Cin, Kk}, wq2)
	yc := cx.ConvInteger1d(cw, g.Const(graph.U8, graph.Shape{}, []byte{100}), g.Const(graph.U8, graph.Shape{}, []byte{127}), graph.ConvOpts{Padding: 1, Stride: 2})
	cv := h.eval(yc)[0].Float64s()
	Lout := (L+2-Kk)/2 + 1
	for co := 0; co < Cout; co++ {
		for tt := 0; tt < Lout; tt++ {
			var acc int64
			for ci := 0; ci < Cin; ci++ {
				for k := 0; k < Kk; k++ {
					i := tt*2 + k - 1
					xv := int64(100)
					if i >= 0 && i < L {
						xv = int64(xq[ci*L+i])
					}
					acc += (xv - 100) * (int64(wq2[(co*Cin+ci)*Kk+k]) - 127)
				}
			}
			if cv[co*Lout+tt] != float64(acc) {
				t.Fatalf("conv_integer1d[%d,%d] = %v, want %d", co, tt, cv[co*Lout+tt], acc)
			}
		}
	}
}

func roundEven(x float64) float64 {
	r := float64(int64(x))
	if d := x - r; d > 0.5 || (d == 0.5 && int64(r)%2 != 0) {
		r++
	} else if d < -0.5 || (d == -0.5 && int64(r)%2 != 0) {
		r--
	}
	return r
}

func TestBroadcastProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for it := 0; it < 2000; it++ {
		ra, rb := rng.IntN(5), rng.IntN(5)
		a, b := make(graph.Shape, ra), make(graph.Shape, rb)
		for i := range a {
			a[i] = []int{0, 1, 1, 2, 3}[rng.IntN(5)]
		}
		for i := range b {
			b[i] = []int{0, 1, 1, 2, 3}[rng.IntN(5)]
		}
		// NumPy's rule, stated independently: align right; extents must be
		// equal or one of them 1.
		r := max(ra, rb)
		want := make([]int, r)
		ok := true
		for i := 0; i < r; i++ {
			da, db := 1, 1
			if j := i - (r - ra); j >= 0 {
				da = a[j]
			}
			if j := i - (r - rb); j >= 0 {
				db = b[j]
			}
			switch {
			case da == db:
				want[i] = da
			case da == 1:
				want[i] = db
			case db == 1:
				want[i] = da
			default:
				ok = false
			}
		}
		got, err := graph.Broadcast(a, b)
		if ok != (err == nil) {
			t.Fatalf("Broadcast(%v, %v): err=%v, want ok=%v", a, b, err, ok)
		}
		if ok && !slices.Equal(got, want) {
			t.Fatalf("Broadcast(%v, %v) = %v, want %v", a, b, got, want)
		}
		// The graph op agrees, and its error names the shapes.
		g := graph.New()
		s := g.Input("a", graph.F32, a).Add(g.Input("b", graph.F32, b))
		if ok != (s.Err() == nil) {
			t.Fatalf("Add(%v, %v): err=%v, want ok=%v", a, b, s.Err(), ok)
		}
		if ok && !s.Shape().Equal(want) {
			t.Fatalf("Add(%v, %v) shape %v, want %v", a, b, s.Shape(), want)
		}
	}
}
