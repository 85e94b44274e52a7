package codegen_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
)

var update = flag.Bool("update", false, "rewrite the golden sources in testdata/golden")

// dense returns a contiguous view of the shape in slot.
func dense(slot int, dt kernels.DType, shape ...int) kernels.View {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return kernels.View{Slot: slot, DType: dt, Shape: shape, Strides: st}
}

// goldenSteps are the reviewed representative kernels: a dense f32 GELU, a
// broadcast bias add with an f16 output, a strided floor-mod over int64
// with an int32 result (saturating store), a Wide comparison with a bool
// output, and where over a broadcast bool mask with bf16 operands.
func goldenSteps() map[string]*kernels.Step {
	x := dense(1, kernels.F32, 4, 8)
	bias := kernels.View{Slot: 2, DType: kernels.F32, Shape: []int{4, 8}, Strides: []int{0, 1}}
	strided := kernels.View{Slot: 1, DType: kernels.I64, Shape: []int{3, 5}, Strides: []int{1, 3}}
	mask := kernels.View{Slot: 1, DType: kernels.Bool, Shape: []int{2, 6}, Strides: []int{6, 0}}
	return map[string]*kernels.Step{
		"gelu_f32": {Op: kernels.OpFused, Name: "gelu", In: []kernels.View{x}, Out: []kernels.View{dense(0, kernels.F32, 4, 8)},
			Expr: &kernels.Expr{NumRegs: 2, Result: 1, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0}, {Op: kernels.EGeluErf, Dst: 1, A: 0}}}},
		"bias_add_f16": {Op: kernels.OpFused, Name: "bias", In: []kernels.View{x, bias}, Out: []kernels.View{dense(0, kernels.F16, 4, 8)},
			Expr: &kernels.Expr{NumRegs: 2, Result: 0, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EAdd, Dst: 0, A: 0, B: 1}}}},
		"mod_i64_i32": {Op: kernels.OpFused, Name: "mod", In: []kernels.View{strided}, Out: []kernels.View{dense(0, kernels.I32, 3, 5)},
			Expr: &kernels.Expr{NumRegs: 2, Result: 0, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0}, {Op: kernels.EConst, Dst: 1, Imm: -3}, {Op: kernels.EMod, Dst: 0, A: 0, B: 1}}}},
		"wide_lt_bool": {Op: kernels.OpFused, Name: "lt", In: []kernels.View{dense(1, kernels.I64, 7), dense(2, kernels.I32, 7)}, Out: []kernels.View{dense(0, kernels.Bool, 7)},
			Expr: &kernels.Expr{Wide: true, NumRegs: 2, Result: 0, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.ELt, Dst: 0, A: 0, B: 1}}}},
		"where_bf16": {Op: kernels.OpFused, Name: "where", In: []kernels.View{mask, dense(2, kernels.BF16, 2, 6)}, Out: []kernels.View{dense(0, kernels.BF16, 2, 6)},
			Expr: &kernels.Expr{NumRegs: 3, Result: 2, Code: []kernels.Instr{{Op: kernels.ELoad, Dst: 0}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EConst, Dst: 2, Imm: -1e9}, {Op: kernels.EWhere, Dst: 2, A: 0, B: 1, C: 2}}}},
	}
}

// TestGoldenSources compares the generated text of the representative
// kernels (and reductions) with reviewed copies (go test -run Golden -update rewrites them).
func TestGoldenSources(t *testing.T) {
	for name, s := range goldenSteps() {
		f, err := codegen.LowerFused(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, d := range dialects {
			src, err := f.Kernel.Source(d)
			if f.Kernel.Regs[0] == codegen.TF64 && d == codegen.MSL {
				if err == nil {
					t.Errorf("%s: a Wide kernel printed as MSL", name)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", name, d, err)
			}
			checkGolden(t, name+ext[d], src)
		}
	}
	for name, s := range goldenReductions() {
		for _, d := range dialects {
			r, err := codegen.LowerReduce(s, d)
			if err != nil {
				t.Fatalf("%s %s: %v", name, d, err)
			}
			src, err := r.Kernel.Source(d)
			if err != nil {
				t.Fatalf("%s %s: %v", name, d, err)
			}
			checkGolden(t, name+ext[d], src)
		}
	}
}

var (
	dialects = []codegen.Dialect{codegen.CUDA, codegen.MSL}
	ext      = map[codegen.Dialect]string{codegen.CUDA: ".cu", codegen.MSL: ".metal"}
)

// goldenReductions: argmax over the last axis of bf16 (a softmax's row
// maximum has the same shape), and an unbiased variance over two axes of
// a permuted f32 view (group norm's statistics), both one thread per
// output; a sum of 300 f16 elements per output, one block per output.
func goldenReductions() map[string]*kernels.Step {
	perm := kernels.View{Slot: 1, DType: kernels.F32, Shape: []int{2, 3, 4}, Strides: []int{1, 8, 2}}
	return map[string]*kernels.Step{
		"argmax_bf16": {Op: kernels.OpReduce, Name: "argmax", In: []kernels.View{dense(1, kernels.BF16, 5, 7)},
			Out: []kernels.View{dense(0, kernels.I64, 5, 1)}, Attr: kernels.ReduceAttr{Kind: kernels.ReduceArgMax, Axes: []int{1}}},
		"sum_block_f16": {Op: kernels.OpReduce, Name: "sum", In: []kernels.View{dense(1, kernels.F16, 4, 300)},
			Out: []kernels.View{dense(0, kernels.F16, 4, 1)}, Attr: kernels.ReduceAttr{Kind: kernels.ReduceSum, Axes: []int{1}}},
		"var_f32": {Op: kernels.OpReduce, Name: "var", In: []kernels.View{perm},
			Out: []kernels.View{dense(0, kernels.F32, 2, 1, 1)}, Attr: kernels.ReduceAttr{Kind: kernels.ReduceVar, Axes: []int{1, 2}, Correction: 1}},
	}
}

func checkGolden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the generated source (review, then go test -run Golden -update):\n%s", path, got)
	}
}
