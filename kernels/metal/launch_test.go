package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
)

func denseView(slot int, dt kernels.DType, shape ...int) kernels.View {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return kernels.View{Slot: slot, DType: dt, Shape: shape, Strides: st}
}

// TestPrepare: the launch of each kind of step (kernel, bindings,
// parameter index, grid), and the steps the backend declines.
func TestPrepare(t *testing.T) {
	f32 := kernels.F32
	relu := &kernels.Expr{NumRegs: 2, Result: 1, Code: []kernels.Instr{{Op: kernels.ELoad}, {Op: kernels.ERelu, Dst: 1}}}
	wide := &kernels.Expr{Wide: true, NumRegs: 2, Result: 1, Code: []kernels.Instr{{Op: kernels.ELoad}, {Op: kernels.ERelu, Dst: 1}}}
	transposed := kernels.View{Slot: 2, DType: f32, Shape: []int{64, 40}, Strides: []int{1, 64}}
	for _, c := range []struct {
		name    string
		step    kernels.Step
		fn      string // prefix of the function; "" when declined
		slots   []int
		threads int
		groups  int
		empty   bool
	}{
		{name: "fused", step: kernels.Step{Op: kernels.OpFused, Expr: relu, In: []kernels.View{denseView(1, f32, 1000)}, Out: []kernels.View{denseView(0, f32, 1000)}},
			fn: "fg_ew_", slots: []int{0, 1}, threads: 1000},
		{name: "fused, no elements", step: kernels.Step{Op: kernels.OpFused, Expr: relu, In: []kernels.View{denseView(1, f32, 0)}, Out: []kernels.View{denseView(0, f32, 0)}},
			fn: "fg_ew_", empty: true},
		{name: "wide fused: no double in MSL", step: kernels.Step{Op: kernels.OpFused, Expr: wide, In: []kernels.View{denseView(1, f32, 8)}, Out: []kernels.View{denseView(0, f32, 8)}}},
		{name: "block reduction", step: kernels.Step{Op: kernels.OpReduce, Attr: kernels.ReduceAttr{Kind: kernels.ReduceSum, Axes: []int{1}},
			In: []kernels.View{denseView(3, f32, 5, 300)}, Out: []kernels.View{denseView(4, f32, 5, 1)}}, fn: "fg_red_", slots: []int{4, 3}, groups: 5},
		{name: "per-thread reduction", step: kernels.Step{Op: kernels.OpReduce, Attr: kernels.ReduceAttr{Kind: kernels.ReduceMax, Axes: []int{1}},
			In: []kernels.View{denseView(3, f32, 5, 7)}, Out: []kernels.View{denseView(4, f32, 5, 1)}}, fn: "fg_red_", slots: []int{4, 3}, threads: 5},
		{name: "matmul, transposed b, bias", step: kernels.Step{Op: kernels.OpMatMul, In: []kernels.View{denseView(1, f32, 100, 64), transposed, denseView(3, f32, 40)},
			Out: []kernels.View{denseView(0, f32, 100, 40)}}, fn: "fk_matmul", slots: []int{0, 1, 2, 3}, groups: 4 * 2},
		{name: "matmul, f16", step: kernels.Step{Op: kernels.OpMatMul, In: []kernels.View{denseView(1, kernels.F16, 4, 4), denseView(2, kernels.F16, 4, 4)},
			Out: []kernels.View{denseView(0, kernels.F16, 4, 4)}}},
		{name: "attention, head of 256", step: kernels.Step{Op: kernels.OpAttention, In: []kernels.View{denseView(1, f32, 2, 256), denseView(2, f32, 3, 256), denseView(3, f32, 3, 8)},
			Out: []kernels.View{denseView(0, f32, 2, 8)}}},
		{name: "attention", step: kernels.Step{Op: kernels.OpAttention, In: []kernels.View{denseView(1, f32, 6, 2, 64), denseView(2, f32, 6, 3, 64), denseView(3, f32, 6, 3, 64)},
			Out: []kernels.View{denseView(0, f32, 6, 2, 64)}}, fn: "fk_attention", slots: []int{0, 1, 2, 3, 1}, groups: 12},
		{name: "lstm, hidden 1024", step: kernels.Step{Op: kernels.OpLSTM, Attr: kernels.LSTMAttr{Hidden: 1024}, In: make([]kernels.View, 7), Out: make([]kernels.View, 3)}},
		{name: "softmax", step: kernels.Step{Op: kernels.OpSoftmax, Attr: kernels.SoftmaxAttr{Axis: 1}, In: []kernels.View{denseView(1, f32, 3, 4, 5)}, Out: []kernels.View{denseView(0, f32, 3, 4, 5)}},
			fn: "fk_softmax", slots: []int{0, 1}, groups: 15},
		{name: "softmax, strided", step: kernels.Step{Op: kernels.OpSoftmax, Attr: kernels.SoftmaxAttr{Axis: 1}, In: []kernels.View{transposed}, Out: []kernels.View{denseView(0, f32, 64, 40)}}},
		{name: "pad: no kernel", step: kernels.Step{Op: kernels.OpPad, Attr: kernels.PadAttr{Before: []int{1}, After: []int{1}}, In: []kernels.View{denseView(1, f32, 4)}, Out: []kernels.View{denseView(0, f32, 6)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := prepare(&c.step)
			if c.fn == "" {
				if err == nil || !errors.Is(err, codegen.ErrUnsupported) || supports(&c.step) {
					t.Fatalf("prepare = %v, %v; want an ErrUnsupported error and Supports false", l, err)
				}
				return
			}
			if c.empty {
				if !errors.Is(err, errEmpty) || !supports(&c.step) {
					t.Fatalf("prepare error %v, want errEmpty (supported, nothing to launch)", err)
				}
				return
			}
			if err != nil || !supports(&c.step) {
				t.Fatalf("prepare: %v", err)
			}
			if !strings.HasPrefix(l.fn, c.fn) || l.threads != c.threads || l.groups != c.groups || !equal(l.slots, c.slots) {
				t.Errorf("launch %s slots %v threads %d groups %d; want %s… %v %d %d", l.fn, l.slots, l.threads, l.groups, c.fn, c.slots, c.threads, c.groups)
			}
			if len(l.params) == 0 || len(l.params)%8 != 0 || len(l.params) > 4096 {
				t.Errorf("parameter block of %d bytes (setBytes takes up to 4 KiB, 8-aligned here)", len(l.params))
			}
			if l.src == "" && (l.firstBuf != 1 || l.paramIx != 0 || !strings.Contains(fixedSource, "kernel void "+l.fn+"(")) {
				t.Errorf("hand-written launch binds from %d, parameters at %d, kernel %s", l.firstBuf, l.paramIx, l.fn)
			}
			if l.src != "" && (l.firstBuf != 0 || l.paramIx != len(l.slots) || !strings.Contains(l.src, "kernel void "+l.fn+"(")) {
				t.Errorf("generated launch binds from %d, parameters at %d of %d buffers", l.firstBuf, l.paramIx, len(l.slots))
			}
		})
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGroupSize(t *testing.T) {
	for _, c := range []struct {
		name       string
		l          launch
		maxThreads int
		want       int
		err        bool
	}{
		{"grid-stride, under the limit", launch{threads: 1000, group: 256}, 1024, 256, false},
		{"grid-stride, over the limit", launch{threads: 1000, group: 256}, 192, 192, false},
		{"grid-stride, fewer threads than a group", launch{threads: 10, group: 256}, 1024, 10, false},
		{"fixed group fits", launch{groups: 4, group: 128}, 1024, 128, false},
		{"fixed group too large", launch{groups: 4, group: 256}, 128, 0, true},
		{"no threads", launch{threads: 4, group: 256}, 0, 0, true},
	} {
		got, err := groupSize(&c.l, c.maxThreads)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: %d, %v; want %d (error %v)", c.name, got, err, c.want, c.err)
		}
	}
}

func TestCacheKeys(t *testing.T) {
	a, b := "kernel void k() {}", "kernel void k() { }"
	if pipelineKey(a, "k") == pipelineKey(b, "k") || pipelineKey(a, "k") == pipelineKey(a, "j") || pipelineKey("", "fk_matmul") != "fixed/fk_matmul" {
		t.Error("pipeline keys do not tell sources and functions apart")
	}
	p1 := archivePath("/c", "Apple M2", "Version 15.1 (Build 24B83)")
	for _, other := range []string{archivePath("/c", "Apple M3", "Version 15.1 (Build 24B83)"), archivePath("/c", "Apple M2", "Version 15.2 (Build 24C101)")} {
		if other == p1 {
			t.Errorf("archives of different GPUs or systems share %s", p1)
		}
	}
	if !strings.HasPrefix(p1, "/c/metal-") || archivePath("", "x", "y") != "" {
		t.Errorf("archive path %q", p1)
	}
}
