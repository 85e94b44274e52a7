package codegen_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
)

func int64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

func addStep(out, a, b kernels.View) *kernels.Step {
	return &kernels.Step{Op: kernels.OpFused, Name: "add", In: []kernels.View{a, b}, Out: []kernels.View{out},
		Expr: &kernels.Expr{NumRegs: 2, Code: []kernels.Instr{{Op: kernels.ELoad}, {Op: kernels.ELoad, Dst: 1, A: 1}, {Op: kernels.EAdd, A: 0, B: 1}}}}
}

// TestFusedParams pins the parameter block's layout (documented in the
// package doc), the access patterns and the coalescing.
func TestFusedParams(t *testing.T) {
	cases := []struct {
		name   string
		step   *kernels.Step
		rank   int
		access []codegen.Access
		want   []int64
	}{
		{"dense", addStep(dense(0, kernels.F32, 3, 4), dense(1, kernels.F32, 3, 4), dense(2, kernels.F32, 3, 4)),
			1, []codegen.Access{codegen.Linear, codegen.Linear, codegen.Linear},
			[]int64{12, 12, 0, 0, 0, 1, 1, 1}},
		{"scalar broadcast with offset", addStep(dense(0, kernels.F32, 3, 4), dense(1, kernels.F32, 3, 4),
			kernels.View{Slot: 2, Offset: 5, DType: kernels.F16, Shape: []int{3, 4}, Strides: []int{0, 0}}),
			1, []codegen.Access{codegen.Linear, codegen.Linear, codegen.Scalar},
			[]int64{12, 12, 0, 0, 5, 1, 1, 0}},
		{"row broadcast and transpose", addStep(dense(0, kernels.F32, 3, 4),
			kernels.View{Slot: 1, DType: kernels.F32, Shape: []int{3, 4}, Strides: []int{1, 3}},
			kernels.View{Slot: 2, Offset: 2, DType: kernels.I32, Shape: []int{3, 4}, Strides: []int{0, 1}}),
			2, []codegen.Access{codegen.Linear, codegen.Strided, codegen.Strided},
			[]int64{12, 3, 4, 0, 0, 2, 4, 1, 1, 3, 0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := codegen.LowerFused(c.step)
			if err != nil {
				t.Fatal(err)
			}
			var acc []codegen.Access
			for _, o := range f.Kernel.Operands {
				acc = append(acc, o.Access)
			}
			if f.Kernel.Rank != c.rank || !slices.Equal(acc, c.access) || !f.Kernel.Index32 {
				t.Errorf("rank %d access %v index32 %t, want %d %v true", f.Kernel.Rank, acc, f.Kernel.Index32, c.rank, c.access)
			}
			if got := int64s(f.Params()); !slices.Equal(got, c.want) {
				t.Errorf("params %v, want %v", got, c.want)
			}
		})
	}
}

// TestKernelIdentity checks what a kernel's name (and so its source and
// cache key) depends on: not the sizes, but the dtypes and the layout.
func TestKernelIdentity(t *testing.T) {
	name := func(s *kernels.Step) string {
		f, err := codegen.LowerFused(s)
		if err != nil {
			t.Fatal(err)
		}
		return f.Kernel.Name
	}
	base := name(addStep(dense(0, kernels.F32, 3, 4), dense(1, kernels.F32, 3, 4), dense(2, kernels.F32, 3, 4)))
	cases := []struct {
		name string
		step *kernels.Step
		same bool
	}{
		{"other sizes", addStep(dense(0, kernels.F32, 70, 9), dense(1, kernels.F32, 70, 9), dense(2, kernels.F32, 70, 9)), true},
		{"other dtype", addStep(dense(0, kernels.F32, 3, 4), dense(1, kernels.F32, 3, 4), dense(2, kernels.BF16, 3, 4)), false},
		{"broadcast operand", addStep(dense(0, kernels.F32, 3, 4), dense(1, kernels.F32, 3, 4),
			kernels.View{Slot: 2, DType: kernels.F32, Shape: []int{3, 4}, Strides: []int{0, 1}}), false},
	}
	for _, c := range cases {
		if got := name(c.step) == base; got != c.same {
			t.Errorf("%s: same kernel %t, want %t", c.name, got, c.same)
		}
	}
	f, _ := codegen.LowerFused(cases[0].step)
	cu, _ := f.Kernel.Source(codegen.CUDA)
	msl, _ := f.Kernel.Source(codegen.MSL)
	g, _ := codegen.LowerFused(addStep(dense(0, kernels.F32, 5), dense(1, kernels.F32, 5), dense(2, kernels.F32, 5)))
	cu2, _ := g.Kernel.Source(codegen.CUDA)
	if codegen.Key(codegen.CUDA, cu) == codegen.Key(codegen.MSL, msl) || codegen.Key(codegen.CUDA, cu) != codegen.Key(codegen.CUDA, cu2) {
		t.Error("cache keys are not a function of dialect and source")
	}
}

// TestLowerErrors: malformed or unsupported steps give errors, never panics.
func TestLowerErrors(t *testing.T) {
	ok := addStep(dense(0, kernels.F32, 3), dense(1, kernels.F32, 3), dense(2, kernels.F32, 3))
	badShape := addStep(dense(0, kernels.F32, 3), dense(1, kernels.F32, 4), dense(2, kernels.F32, 3))
	badReg := addStep(dense(0, kernels.F32, 3), dense(1, kernels.F32, 3), dense(2, kernels.F32, 3))
	badReg.Expr = &kernels.Expr{NumRegs: 1, Code: []kernels.Instr{{Op: kernels.ELoad, A: 5}}}
	notFused := *ok
	notFused.Op = kernels.OpSoftmax
	wide := addStep(dense(0, kernels.F32, 3), dense(1, kernels.F32, 3), dense(2, kernels.F32, 3))
	wide.Expr.Wide = true
	for _, c := range []struct {
		name        string
		step        *kernels.Step
		unsupported bool
	}{
		{"shape mismatch", badShape, false},
		{"bad operand", badReg, false},
		{"not fused", &notFused, true},
	} {
		_, err := codegen.LowerFused(c.step)
		if err == nil || errors.Is(err, codegen.ErrUnsupported) != c.unsupported {
			t.Errorf("%s: error %v, want one (unsupported: %t)", c.name, err, c.unsupported)
		}
	}
	f, err := codegen.LowerFused(wide)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Kernel.Source(codegen.MSL); !errors.Is(err, codegen.ErrUnsupported) {
		t.Errorf("Wide kernel as MSL: %v, want ErrUnsupported", err)
	}
	red := &kernels.Step{Op: kernels.OpReduce, In: []kernels.View{dense(1, kernels.F32, 4, 5)},
		Out: []kernels.View{{Slot: 0, DType: kernels.F32, Shape: []int{4, 1}, Strides: []int{2, 1}}}, Attr: kernels.ReduceAttr{Axes: []int{1}}}
	if _, err := codegen.LowerReduce(red, codegen.CUDA); !errors.Is(err, codegen.ErrUnsupported) {
		t.Errorf("reduction into a strided output: %v, want ErrUnsupported", err)
	}
	red.Attr = nil
	if _, err := codegen.LowerReduce(red, codegen.CUDA); err == nil {
		t.Error("reduction without attributes lowered")
	}
}

// TestReduceParams pins the reduction's parameter block: kept and reduced
// axes split and merged where they walk memory as one.
func TestReduceParams(t *testing.T) {
	in := kernels.View{Slot: 1, Offset: 3, DType: kernels.F32, Shape: []int{2, 3, 4}, Strides: []int{1, 8, 2}}
	s := &kernels.Step{Op: kernels.OpReduce, In: []kernels.View{in}, Out: []kernels.View{dense(0, kernels.F32, 2, 1, 1)},
		Attr: kernels.ReduceAttr{Kind: kernels.ReduceVar, Axes: []int{1, 2}, Correction: 1}}
	r, err := codegen.LowerReduce(s, codegen.MSL)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{2, 12, 1, 3, 0, 2, 1, 12, 2}
	if got := int64s(r.Params()); !slices.Equal(got, want) || r.Kernel.KeptRank != 1 || r.Kernel.RedRank != 1 || r.Kernel.Acc != codegen.TF32 {
		t.Errorf("params %v (kept %d, reduced %d, acc %s), want %v (1, 1, f32)", got, r.Kernel.KeptRank, r.Kernel.RedRank, r.Kernel.Acc, want)
	}
}
