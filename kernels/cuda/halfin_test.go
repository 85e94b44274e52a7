package cuda

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// encoderMLP is an encoder layer's MLP over 1,500 rows as the graph
// compiles it: the norm, fc1 (a weight in slot 20), GELU, fc2 (slot 22),
// and the residual add that reads fc2's output and the norm's input.
func encoderMLP() []kernels.Step {
	f32 := kernels.F32
	const d, rows = 384, 1500
	a := func(off int, shape ...int) kernels.View { return dv(0, off, f32, shape...) }
	mm := func(x, w, out kernels.View) kernels.Step {
		return kernels.Step{Op: kernels.OpMatMul, Name: "matmul", In: []kernels.View{x, w}, Out: []kernels.View{out}}
	}
	x, ln, h, g, y := a(0, 1, rows, d), a(rows*d, 1, rows, d), a(2*rows*d, 1, rows, 4*d), a(6*rows*d, 1, rows, 4*d), a(2*rows*d, 1, rows, d)
	return []kernels.Step{
		{Op: kernels.OpLayerNorm, Name: "layer_norm", Attr: kernels.NormAttr{Axis: 2, Eps: 1e-5}, In: []kernels.View{x, dv(10, 0, f32, d), dv(11, 0, f32, d)}, Out: []kernels.View{ln}}, // 0
		mm(ln, dv(20, 0, f32, 1, d, 4*d), h), // 1 fc1
		{Op: kernels.OpFused, Name: "gelu_erf", Expr: exprGelu, In: []kernels.View{h, {Slot: 21, DType: f32, Shape: []int{1, rows, 4 * d}, Strides: []int{0, 0, 1}}}, Out: []kernels.View{g}}, // 2
		mm(g, dv(22, 0, f32, 1, 4*d, d), y), // 3 fc2
		{Op: kernels.OpFused, Name: "add", Expr: exprAdd, In: []kernels.View{y, x}, Out: []kernels.View{dv(30, 0, f32, 1, rows, d)}}, // 4
	}
}

// TestHalfFeeds: which steps store their output in half precision for the
// product after them. In the MLP both the norm and the GELU do, with f16 or
// bf16 products; none does in float32, when the operand is read again
// after the product, when the product reads it as its other operand too,
// or when the producer is part of a merged launch.
func TestHalfFeeds(t *testing.T) {
	none := func(int) bool { return false }
	for _, c := range []struct {
		name      string
		prec      kernels.DType
		steps     func() []kernels.Step
		readAfter func(kernels.View) bool
		skip      func(int) bool
		want      []int
	}{
		{"f16", kernels.F16, encoderMLP, arenaReadAfter, none, []int{0, 2}},
		{"bf16", kernels.BF16, encoderMLP, arenaReadAfter, none, []int{0, 2}},
		{"f32", kernels.F32, encoderMLP, arenaReadAfter, none, nil},
		{"all read after", kernels.F16, encoderMLP, func(kernels.View) bool { return true }, none, nil},
		{"norm merged elsewhere", kernels.F16, encoderMLP, arenaReadAfter, func(i int) bool { return i == 0 }, []int{2}},
		{"norm read after fc1", kernels.F16, func() []kernels.Step {
			s := encoderMLP()
			s[4].In[1] = s[0].Out[0] // the residual reads the norm's output
			return s
		}, arenaReadAfter, none, []int{2}},
		{"GELU output is fc2's weight too", kernels.F16, func() []kernels.Step {
			s := encoderMLP()
			s[3].In[1] = dv(0, 6*1500*384, kernels.F32, 1, 4*384, 384)
			return s
		}, arenaReadAfter, none, []int{0}},
		{"operand in other shapes", kernels.F16, func() []kernels.Step {
			s := encoderMLP()
			s[2].Out[0] = dv(0, 6*1500*384, kernels.F32, 1500, 24, 64)
			return s
		}, arenaReadAfter, none, []int{0, 2}},
		{"operand a part of the output", kernels.F16, func() []kernels.Step {
			s := encoderMLP()
			s[2].Out[0] = dv(0, 6*1500*384, kernels.F32, 1, 1501, 4*384)
			return s
		}, arenaReadAfter, none, []int{0}},
		{"strided operand", kernels.F16, func() []kernels.Step {
			s := encoderMLP()
			v := s[2].Out[0]
			v.Shape, v.Strides = []int{1, 1500, 1536}, []int{1500 * 1600, 1600, 1}
			s[2].Out[0], s[3].In[0] = v, v
			return s
		}, arenaReadAfter, none, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &Backend{precision: c.prec, blas: &gemm{}}
			feeds := b.halfFeeds(c.steps(), c.readAfter, c.skip)
			var got []int
			for i, f := range feeds {
				if f {
					got = append(got, i)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("half feeds at steps %v, want %v", got, c.want)
			}
		})
	}
}

// TestHalfStepCompiles compiles the GELU with its output in f16 and in
// bf16, as a plan generates it, with Debian's NVRTC (CI has it), and
// checks that it stores 16-bit values.
func TestHalfStepCompiles(t *testing.T) {
	lib, err := nvrtc.Default()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must compile the CUDA kernels, but NVRTC is missing: %v", err)
		}
		t.Skipf("SKIPPED: no NVRTC here, the half-output kernels are not compile-checked: %v", err)
	}
	for _, prec := range []kernels.DType{kernels.F16, kernels.BF16} {
		b := &Backend{precision: prec}
		h := b.halfStep(&encoderMLP()[2])
		f, err := codegen.LowerFused(&h)
		if err != nil {
			t.Fatalf("%v: %v", prec, err)
		}
		src, err := f.Kernel.Source(codegen.CUDA)
		if err != nil {
			t.Fatal(err)
		}
		ptx, log, err := lib.Compile(src, f.Kernel.Name+".cu", nvrtc.ArchOption("compute_90"), "--std=c++14")
		if err != nil {
			t.Fatalf("%v: %v\n%s\n%s", prec, err, log, src)
		}
		if !strings.Contains(string(ptx), "st.global.u16") && !strings.Contains(string(ptx), "st.global.b16") {
			t.Errorf("%v: the kernel stores no 16-bit values:\n%s", prec, ptx)
		}
		if f.Views[0].Slot != scratchSlot {
			t.Errorf("%v: output slot %d, want the scratch's", prec, f.Views[0].Slot)
		}
	}
}
