package graph_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestConv1dLongTiled covers convolutions whose im2col would exceed the
// CPU backend's scratch budget (2M floats), so that their output columns
// are produced in tiles: dilated and strided taps, zero borders on both
// sides and a last tile shorter than the others.
func TestConv1dLongTiled(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	cases := []struct {
		cin, cout, l, k, stride, pad, dil int
	}{
		{24, 5, 9001, 11, 1, 5, 1},   // 264 rows × 9001 columns
		{24, 3, 12007, 7, 1, 9, 3},   // dilated
		{48, 4, 11000, 3, 2, 1, 1},   // strided: 5500 columns
		{16, 2, 20011, 11, 1, 25, 5}, // dilation 5, odd tail
	}
	for _, c := range cases {
		x := kerneltest.RandND(rng, -1, 1, 1, c.cin, c.l).Round32()
		w := kerneltest.RandND(rng, -1, 1, c.cout, c.cin, c.k).Round32()
		b := kerneltest.RandND(rng, -1, 1, c.cout).Round32()
		h := newHarness(t)
		y := h.in(x).Conv1d(h.in(w), h.in(b), graph.ConvOpts{Stride: c.stride, Padding: c.pad, Dilation: c.dil})
		closeTo(t, "tiled conv1d", h.eval(y)[0], kerneltest.Conv1d(x, w, b.Data, c.stride, c.pad, c.pad, c.dil, 1), 1e-5)
	}
}
