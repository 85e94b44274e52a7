package cuda

import (
	"testing"

	"github.com/tensorforge/forge/kernels"
)

// TestFASplits: the encoder's flash attention splits the keys inside its
// blocks only where its blocks of 64 rows would leave an SM fewer than
// two, and the split kernel's blocks still fit in one wave.
func TestFASplits(t *testing.T) {
	for _, c := range []struct {
		n, batch, sms int
		want          bool
	}{
		{1500, 6, 132, true},       // one 30-s window of Whisper tiny: 144 blocks
		{1500, 8, 132, true},       // base's 8 heads: 192 blocks, 256 split
		{1500, 12, 132, false},     // two windows: 288 blocks already fill the SMs
		{1500, 6 * 32, 132, false}, // a batch of 32 windows
		{300, 6, 132, true},        // a short window
		{1500, 6, 60, false},       // a smaller GPU: the split blocks would not fit one wave
		{1500, 20, 132, false},     // whisper large's 20 heads
	} {
		if got := faSplits(c.n, c.batch, c.sms); got != c.want {
			t.Errorf("faSplits(%d rows, %d heads, %d SMs) = %v, want %v", c.n, c.batch, c.sms, got, c.want)
		}
	}
}

// TestGroupSplits: the blocks a group norm gives each group (groupSplits).
func TestGroupSplits(t *testing.T) {
	for _, c := range []struct {
		groups int
		size   int64
		want   int
	}{
		{128, 47761, 8},    // Kokoro's generator, 128 channels: 1,024 blocks
		{256, 7960, 4},     // 256 channels at 7,960 frames
		{8, 6000, 3},       // short groups: at least 2,048 values a block
		{2, 200, 1},        // a small norm keeps forge_group_norm
		{1024, 1 << 20, 1}, // the groups alone fill the device
		{1, 1 << 30, 1024},
	} {
		if got := groupSplits(c.groups, c.size); got != c.want {
			t.Errorf("groupSplits(%d groups of %d) = %d, want %d", c.groups, c.size, got, c.want)
		}
	}
}

// TestFullPrecisionSteps: with f16 products, a step of a full-precision
// graph (kernels.Step.F32) still multiplies in float32: no half operands,
// no half scratch, float32 columns for a convolution.
func TestFullPrecisionSteps(t *testing.T) {
	b := &Backend{precision: kernels.F16, blas: &gemm{}}
	dense := func(shape ...int) kernels.View {
		st := make([]int, len(shape))
		n := 1
		for i := len(shape) - 1; i >= 0; i-- {
			st[i], n = n, n*shape[i]
		}
		return kernels.View{DType: kernels.F32, Shape: shape, Strides: st}
	}
	product := func(f32 bool) *kernels.Step {
		return &kernels.Step{Op: kernels.OpMatMul, F32: f32, Attr: kernels.MatMulAttr{},
			In: []kernels.View{dense(64, 128), dense(128, 32)}, Out: []kernels.View{dense(64, 32)}}
	}
	conv := func(f32 bool) *kernels.Step {
		return &kernels.Step{Op: kernels.OpConv1d, F32: f32, Attr: kernels.ConvAttr{Stride: 1, Dilation: 1, Groups: 1},
			In: []kernels.View{dense(1, 128, 4096), dense(128, 128, 3)}, Out: []kernels.View{dense(1, 128, 4096)}}
	}
	for _, f32 := range []bool{false, true} {
		want := kernels.F16
		if f32 {
			want = kernels.F32
		}
		if got := b.stepPrecision(product(f32)); got != want {
			t.Errorf("F32 %v: step precision %s, want %s", f32, got, want)
		}
		if got := runsHalf(b, product(f32)); got == f32 {
			t.Errorf("F32 %v: runsHalf = %v", f32, got)
		}
		if got := scratchBytes(product(f32), b) > 0; got == f32 {
			t.Errorf("F32 %v: half scratch for the product: %v", f32, got)
		}
	}
	half, _ := convGEMM(conv(false), b)
	full, _ := convGEMM(conv(true), b)
	if !(full > half) {
		t.Errorf("a full-precision convolution's columns take %d bytes, a half one's %d: want float32 columns, larger", full, half)
	}
}
