package cuda

import (
	"testing"

	"github.com/tensorforge/forge/kernels"
)

// TestTransposeOf: which copies take forge_transpose (no GPU needed; on a
// GPU, TestTransposeCopy checks what it computes).
func TestTransposeOf(t *testing.T) {
	copyOf := func(in, out kernels.View) *kernels.Step {
		return &kernels.Step{Op: kernels.OpFused, Expr: &kernels.Expr{Code: []kernels.Instr{{Op: kernels.ELoad}}, NumRegs: 1}, In: []kernels.View{in}, Out: []kernels.View{out}}
	}
	view := func(dt kernels.DType, shape, strides []int) kernels.View {
		return kernels.View{DType: dt, Shape: shape, Strides: strides}
	}
	f32 := kernels.F32
	add := copyOf(view(f32, []int{100, 37}, []int{1, 100}), view(f32, []int{100, 37}, []int{37, 1}))
	add.Expr = &kernels.Expr{Code: []kernels.Instr{{Op: kernels.ELoad}, {Op: kernels.EAdd, Dst: 0, A: 0, B: 0}}, NumRegs: 1}
	for _, tc := range []struct {
		name string
		s    *kernels.Step
		want transposed
		ok   bool
	}{
		{"transposed matrix", copyOf(view(f32, []int{100, 37}, []int{1, 100}), view(f32, []int{100, 37}, []int{37, 1})), transposed{100, 37, 100, 37}, true},
		// Whisper's cross keys: [6, 64, 1500] heads of a [1500, 384] product.
		{"heads", copyOf(view(f32, []int{6, 64, 1500}, []int{64, 1, 384}), view(f32, []int{6, 64, 1500}, []int{96000, 1500, 1})), transposed{384, 1500, 384, 1500}, true},
		{"dense copy", copyOf(view(f32, []int{100, 37}, []int{37, 1}), view(f32, []int{100, 37}, []int{37, 1})), transposed{}, false},
		{"three matrices", copyOf(view(f32, []int{3, 64, 1500}, []int{96000, 1, 64}), view(f32, []int{3, 64, 1500}, []int{96000, 1500, 1})), transposed{}, false},
		{"half precision", copyOf(view(kernels.F16, []int{100, 37}, []int{1, 100}), view(kernels.F16, []int{100, 37}, []int{37, 1})), transposed{}, false},
		{"not a copy", add, transposed{}, false},
	} {
		got, ok := transposeOf(tc.s)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: transposeOf = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
