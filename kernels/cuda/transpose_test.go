package cuda

import (
	"slices"
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

// TestTransposeGroups: runs of consecutive transposing copies become one
// launch of up to eight (no GPU needed; on a GPU, TestTransposeCopy checks
// what it computes): a copy that reads another's output, or another kind
// of step between them, ends a run, and a run of one stays a plain copy.
func TestTransposeGroups(t *testing.T) {
	f32 := kernels.F32
	tr := func(in, out int) kernels.Step { // slot in's [100, 37] read down its columns into slot out
		return kernels.Step{Op: kernels.OpFused, Expr: &kernels.Expr{Code: []kernels.Instr{{Op: kernels.ELoad}}, NumRegs: 1},
			In:  []kernels.View{{Slot: in, DType: f32, Shape: []int{100, 37}, Strides: []int{1, 100}}},
			Out: []kernels.View{{Slot: out, DType: f32, Shape: []int{100, 37}, Strides: []int{37, 1}}}}
	}
	other := kernels.Step{Op: kernels.OpSoftmax}
	many := func(n int) []kernels.Step {
		var s []kernels.Step
		for i := range n {
			s = append(s, tr(1, 2+i))
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		steps []kernels.Step
		want  map[int][]int
	}{
		{"three", many(3), map[int][]int{0: {0, 1, 2}}},
		{"ten", many(10), map[int][]int{0: {0, 1, 2, 3, 4, 5, 6, 7}, 8: {8, 9}}},
		{"one", many(1), nil},
		{"reads another's output", []kernels.Step{tr(1, 2), tr(2, 3), tr(1, 4)}, map[int][]int{1: {1, 2}}},
		{"writes what another reads", []kernels.Step{tr(1, 2), tr(3, 1)}, nil},
		{"another step between", []kernels.Step{tr(1, 2), other, tr(1, 3), tr(1, 4)}, map[int][]int{2: {2, 3}}},
	} {
		got, absorbed := transposeGroups(tc.steps, func(int) bool { return false })
		if len(got) != len(tc.want) {
			t.Errorf("%s: groups %v, want %v", tc.name, got, tc.want)
			continue
		}
		for first, run := range tc.want {
			if !slices.Equal(got[first], run) {
				t.Errorf("%s: group at %d is %v, want %v", tc.name, first, got[first], run)
			}
			for _, j := range run[1:] {
				if !absorbed[j] {
					t.Errorf("%s: step %d is not absorbed into the group at %d", tc.name, j, first)
				}
			}
		}
	}
}
