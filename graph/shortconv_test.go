package graph_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestConv1dFewFrames covers convolutions with kernels longer than their
// output (the CPU backend lays their im2col out transposed): padding on
// either side, fields wholly inside the padding, strides, groups, batch.
func TestConv1dFewFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, c := range []struct {
		n, cin, cout, l, k, stride, padL, padR, groups int
	}{
		{1, 1, 6, 40, 16, 8, 0, 0, 1},      // STFT-like: 4 frames
		{1, 1, 10, 640, 256, 128, 0, 0, 1}, // Silero's STFT: 4 frames of 256
		{2, 3, 4, 6, 9, 2, 3, 2, 1},        // fields reaching into both pads
		{1, 2, 2, 3, 8, 1, 7, 6, 1},        // some fields entirely in padding
		{1, 4, 6, 12, 13, 3, 1, 5, 2},      // groups
		{3, 2, 5, 5, 7, 5, 4, 4, 1},        // batch
		{1, 129, 128, 4, 3, 1, 1, 1, 1},    // Silero encoder: few frames, short kernel
		{2, 16, 40, 8, 3, 2, 1, 1, 2},      // few frames, stride and groups
	} {
		x := kerneltest.RandND(rng, -1, 1, c.n, c.cin, c.l).Round32()
		w := kerneltest.RandND(rng, -1, 1, c.cout, c.cin/c.groups, c.k).Round32()
		b := kerneltest.RandND(rng, -1, 1, c.cout).Round32()
		want := kerneltest.Conv1d(x, w, b.Data, c.stride, c.padL, c.padR, 1, c.groups)
		opts := graph.ConvOpts{Stride: c.stride, PadLeft: c.padL, PadRight: c.padR, Groups: c.groups}
		// Run-time weights, and constant ones (packed once by the backend).
		h := newHarness(t)
		y := h.in(x).Conv1d(h.in(w), h.in(b), opts)
		closeTo(t, "conv1d", h.eval(y)[0], want, 1e-5)
		wc := h.g.ParamF32("w", graph.Shape(w.Shape), w.F32())
		for i := 0; i < 2; i++ { // the second run reuses the packed weight
			yc := h.in(x).Conv1d(wc, h.in(b), opts)
			closeTo(t, "conv1d, constant weight", h.eval(yc)[0], want, 1e-5)
		}
	}
}

// TestPadLongRows checks reflect, replicate and constant padding of rows
// longer than the padding, where the row is copied in one piece.
func TestPadLongRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	x := kerneltest.RandND(rng, -1, 1, 2, 3, 50).Round32()
	ref := func(mode kernels.PadMode, l, r int) kerneltest.ND {
		out := kerneltest.NewND(2, 3, 50+l+r)
		for row := 0; row < 6; row++ {
			for t := 0; t < 50+l+r; t++ {
				j := t - l
				switch {
				case j >= 0 && j < 50:
				case mode == kernels.PadReflect && j < 0:
					j = -j
				case mode == kernels.PadReflect:
					j = 2*49 - j
				case mode == kernels.PadReplicate:
					j = max(0, min(j, 49))
				default:
					out.Data[row*(50+l+r)+t] = 0.5
					continue
				}
				out.Data[row*(50+l+r)+t] = x.Data[row*50+j]
			}
		}
		return out
	}
	for _, c := range []struct {
		mode kernels.PadMode
		l, r int
	}{{kernels.PadReflect, 0, 13}, {kernels.PadReflect, 7, 0}, {kernels.PadReflect, 4, 9}, {kernels.PadReplicate, 5, 6}, {kernels.PadConstant, 3, 0}, {kernels.PadConstant, 0, 0}} {
		h := newHarness(t)
		y := h.in(x).Pad(c.mode, 0.5, []int{0, 0, c.l}, []int{0, 0, c.r})
		closeTo(t, "pad", h.eval(y)[0], ref(c.mode, c.l, c.r), 0)
	}
}
