package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
)

// TestFusedInnerAxis runs fused expressions whose output has a short last
// axis (nearest upsampling's [L, 2] among them), walking the axis that
// innerAxis picks and, as before it existed, the last one: the results
// must be the same bits, since each element is computed alone. The
// operands are dense, broadcast along the short axis (stride 0, the
// upsampling's source) and broadcast along another.
func TestFusedInnerAxis(t *testing.T) {
	// out = sin(a)·b + c, with a, b, c per the views below.
	expr := &kernels.Expr{NumRegs: 6, Result: 5, Code: []kernels.Instr{
		{Op: kernels.ELoad, Dst: 0, A: 0},
		{Op: kernels.ELoad, Dst: 1, A: 1},
		{Op: kernels.ELoad, Dst: 2, A: 2},
		{Op: kernels.ESin, Dst: 3, A: 0},
		{Op: kernels.EMul, Dst: 4, A: 3, B: 1},
		{Op: kernels.EAdd, Dst: 5, A: 4, B: 2},
	}}
	for _, tc := range []struct {
		name  string
		shape []int
		axis  int // innerAxis's pick
	}{
		{"upsampling [L, 2]", []int{1000, 2}, 0},
		{"[C, L, 2]", []int{3, 700, 2}, 1},
		{"[L, 4, 3]", []int{900, 4, 3}, 0},
		{"long enough last axis", []int{50, 16}, 1},
		{"no axis long enough", []int{31, 2}, 1},
		{"one axis", []int{5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			rank := len(tc.shape)
			n := 1
			for _, d := range tc.shape {
				n *= d
			}
			dense := make([]int, rank) // row-major strides of the shape
			for d, s := rank-1, 1; d >= 0; d-- {
				dense[d] = s
				s *= tc.shape[d]
			}
			// b broadcast along the last axis: its source has shape[:last].
			bStr := append([]int(nil), dense...)
			bStr[rank-1] = 0
			for d := 0; d < rank-1; d++ {
				bStr[d] = dense[d] / tc.shape[rank-1]
			}
			// c broadcast along axis 0: its source is one slice.
			cStr := append([]int(nil), dense...)
			cStr[0] = 0
			r := rand.New(rand.NewPCG(3, 4))
			bufs := []kernels.Buffer{nil, f32Buf(r, n), f32Buf(r, n), f32Buf(r, n)}
			views := []kernels.View{
				{Slot: 1, DType: kernels.F32, Shape: tc.shape, Strides: dense},
				{Slot: 2, DType: kernels.F32, Shape: tc.shape, Strides: bStr},
				{Slot: 3, DType: kernels.F32, Shape: tc.shape, Strides: cStr},
			}
			run := func(along int) []float32 {
				out := make([]float32, n)
				bufs[0] = &buffer{b: unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*n)}
				s := &kernels.Step{Op: kernels.OpFused, Expr: expr, In: views,
					Out: []kernels.View{{Slot: 0, DType: kernels.F32, Shape: tc.shape, Strides: dense}}}
				if along < 0 {
					if got := innerAxis(s); got != tc.axis {
						t.Errorf("innerAxis = %d, want %d", got, tc.axis)
					}
					if err := b.fused(s, bufs); err != nil {
						t.Fatal(err)
					}
				} else if err := b.fusedAlong(s, bufs, along); err != nil {
					t.Fatal(err)
				}
				return out
			}
			got, want := run(-1), run(rank-1)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v walking axis %d, %v walking the last", i, got[i], tc.axis, want[i])
				}
			}
			if want[n-1] == 0 {
				t.Errorf("the last element was not written")
			}
		})
	}
}

// f32Buf is a buffer of n random floats in [-2, 2).
func f32Buf(r *rand.Rand, n int) *buffer {
	x := make([]float32, n)
	for i := range x {
		x[i] = 4*r.Float32() - 2
	}
	return &buffer{b: unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*n)}
}

// TestFusedRows evaluates a·b + c over outputs of several rows, each
// several tiles long and not a whole number of them, with a dense, a
// transposed and a broadcast operand, on one thread and split between
// threads (whose ranges start inside rows): every element must be the
// float32 a·b + c of its own operands.
func TestFusedRows(t *testing.T) {
	expr := &kernels.Expr{NumRegs: 5, Result: 4, Code: []kernels.Instr{
		{Op: kernels.ELoad, Dst: 0, A: 0},
		{Op: kernels.ELoad, Dst: 1, A: 1},
		{Op: kernels.ELoad, Dst: 2, A: 2},
		{Op: kernels.EMul, Dst: 3, A: 0, B: 1},
		{Op: kernels.EAdd, Dst: 4, A: 3, B: 2},
	}}
	for _, tc := range []struct {
		name    string
		shape   []int
		threads int
	}{
		{"one row", []int{1500}, 2},
		{"rows, one thread", []int{4, 7, 1100}, 1},
		{"rows, two threads", []int{5, 37, 1100}, 2},
		{"short rows, two threads", []int{300, 3, 40}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New()
			b.threads = tc.threads
			rank := len(tc.shape)
			n := 1
			for _, d := range tc.shape {
				n *= d
			}
			dense := make([]int, rank)
			for d, s := rank-1, 1; d >= 0; d-- {
				dense[d] = s
				s *= tc.shape[d]
			}
			// b: the same elements stored with the axes reversed.
			rev := make([]int, rank)
			for d, s := 0, 1; d < rank; d++ {
				rev[d] = s
				s *= tc.shape[d]
			}
			// c: broadcast along every axis but the last.
			bc := make([]int, rank)
			bc[rank-1] = 1
			r := rand.New(rand.NewPCG(9, 10))
			ab, bb, cb := f32Buf(r, n), f32Buf(r, n), f32Buf(r, tc.shape[rank-1])
			out := make([]float32, n)
			bufs := []kernels.Buffer{&buffer{b: unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*n)}, ab, bb, cb}
			s := &kernels.Step{Op: kernels.OpFused, Expr: expr,
				In: []kernels.View{
					{Slot: 1, DType: kernels.F32, Shape: tc.shape, Strides: dense},
					{Slot: 2, DType: kernels.F32, Shape: tc.shape, Strides: rev},
					{Slot: 3, DType: kernels.F32, Shape: tc.shape, Strides: bc},
				},
				Out: []kernels.View{{Slot: 0, DType: kernels.F32, Shape: tc.shape, Strides: dense}}}
			if err := b.fused(s, bufs); err != nil {
				t.Fatal(err)
			}
			av, bv, cv := f32s(bufs, s.In[0]), f32s(bufs, s.In[1]), f32s(bufs, s.In[2])
			idx := make([]int, rank)
			for i := range n {
				rem := i
				for d := rank - 1; d >= 0; d-- {
					idx[d] = rem % tc.shape[d]
					rem /= tc.shape[d]
				}
				off := func(st []int) int {
					o := 0
					for d, x := range idx {
						o += x * st[d]
					}
					return o
				}
				want := float32(av[off(dense)]*bv[off(rev)]) + cv[off(bc)]
				if math.Float32bits(out[i]) != math.Float32bits(want) {
					t.Fatalf("element %v: %v, want %v", idx, out[i], want)
				}
			}
		})
	}
}
