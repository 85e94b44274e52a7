package cuda

import "github.com/tensorforge/forge/kernels"

// Products that take their left operand in half precision from the step
// before them.
//
// With half-precision products (f16 or bf16) every cuBLASLt product first
// copies its float32 left operand, rounded, into the queue's scratch
// (forge_to_half): a launch of its own, and a float32 write and read of
// activations that nothing else needs. In Whisper tiny's encoder, 17 such
// copies took ~74 µs of a window's ~640 µs of kernels on an H100, and at 32
// windows a batch the copy of fc2's input alone moves 440 MB a layer. When
// the step just before the product computes exactly that operand, densely,
// and nothing after the product reads it, the step stores its results
// rounded to half precision straight into the scratch — a generated
// kernel with a half output, or the layer norm's half store — and the
// product reads them from there. Both round to nearest even, as
// forge_to_half does, so the product's operand bits are unchanged.

// scratchSlot is the operand slot of a generated kernel's output that is
// the queue's scratch rather than a buffer of the table.
const scratchSlot = -1

// halfFeeds reports, for each step, whether it leaves its output in half
// precision in the scratch for the product right after it; skip says a
// step is launched as part of another (fuse's groups).
func (b *Backend) halfFeeds(steps []kernels.Step, readAfter func(kernels.View) bool, skip func(int) bool) []bool {
	var feeds []bool
	if b.blas == nil || b.precision == kernels.F32 {
		return nil
	}
	for i := 1; i < len(steps); i++ {
		j, s := i-1, &steps[i]
		if s.Op != kernels.OpMatMul || skip(i) || skip(j) || !b.blas.supports(s) || !runsHalf(b, s) || !feedsHalf(&steps[j]) {
			continue
		}
		// The operand is the producer's output element for element, in
		// whatever shapes the two see it (the attention's [rows, heads,
		// 64] is the out-projection's [rows, 384]).
		a, o := s.In[0], steps[j].Out[0]
		if !dense(a) || !dense(o) || a.Slot != o.Slot || a.Offset != o.Offset || a.Len() != o.Len() || !deadAfter(steps, i, a, readAfter) {
			continue
		}
		clash := false
		for _, v := range s.In[1:] {
			clash = clash || overlaps(v, a)
		}
		if clash {
			continue // the product reads the operand's float32 bytes as another operand
		}
		if feeds == nil {
			feeds = make([]bool, len(steps))
		}
		feeds[j] = true
	}
	return feeds
}

// feedsHalf reports whether step s can store its one output in half
// precision: a generated elementwise kernel (not a plain transpose, which
// launches forge_transpose), or a layer norm.
func feedsHalf(s *kernels.Step) bool {
	if len(s.Out) != 1 || s.Out[0].DType != kernels.F32 {
		return false
	}
	switch s.Op {
	case kernels.OpFused:
		_, transpose := transposeOf(s)
		return !transpose
	case kernels.OpLayerNorm:
		return true
	}
	return false
}

// halfStep is generated step s with its output moved to the start of the
// scratch in the backend's half precision. halfFeeds admits only dense
// outputs, so the output's own strides lay it out densely there too.
func (b *Backend) halfStep(s *kernels.Step) kernels.Step {
	h := *s
	o := s.Out[0]
	dt := kernels.F16
	if b.precision == kernels.BF16 {
		dt = kernels.BF16
	}
	h.Out = []kernels.View{{Slot: scratchSlot, DType: dt, Shape: o.Shape, Strides: o.Strides}}
	return h
}
