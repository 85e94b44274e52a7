package graph_test

import (
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

func TestConv1d(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cases := []struct {
		n, cin, cout, l, k, stride, padL, padR, dil, groups int
		bias                                                bool
	}{
		{1, 3, 4, 10, 3, 1, 1, 1, 1, 1, true},
		{2, 4, 6, 17, 3, 2, 1, 1, 1, 2, false},
		{1, 8, 8, 20, 5, 1, 4, 4, 2, 8, true}, // depthwise, dilated
		{1, 5, 7, 9, 1, 1, 0, 0, 1, 1, true},  // pointwise (no im2col)
		{1, 2, 3, 12, 4, 3, 0, 2, 1, 1, true},
		{1, 80, 16, 300, 3, 1, 1, 1, 1, 1, true}, // Whisper-like
		{1, 1, 4, 64, 16, 8, 0, 0, 1, 1, false},  // STFT-like basis
	}
	for _, c := range cases {
		x := kerneltest.RandND(rng, -1, 1, c.n, c.cin, c.l).Round32()
		w := kerneltest.RandND(rng, -1, 1, c.cout, c.cin/c.groups, c.k).Round32()
		var bias kerneltest.ND
		var bdata []float64
		if c.bias {
			bias = kerneltest.RandND(rng, -1, 1, c.cout).Round32()
			bdata = bias.Data
		}
		h := newHarness(t)
		bt := graph.Tensor{}
		if c.bias {
			bt = h.in(bias)
		}
		y := h.in(x).Conv1d(h.in(w), bt, graph.ConvOpts{Stride: c.stride, PadLeft: c.padL, PadRight: c.padR, Dilation: c.dil, Groups: c.groups})
		closeTo(t, "conv1d", h.eval(y)[0], kerneltest.Conv1d(x, w, bdata, c.stride, c.padL, c.padR, c.dil, c.groups), 1e-5)
	}
}

func TestConvTranspose1d(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	cases := []struct {
		cin, cout, l, k, stride, pad, outPad, dil, groups int
	}{
		{3, 4, 10, 3, 1, 1, 0, 1, 1},
		{4, 6, 7, 4, 2, 1, 1, 1, 2},
		{6, 6, 9, 3, 2, 1, 1, 1, 6}, // depthwise upsampling as in Kokoro
		{2, 3, 5, 20, 10, 5, 0, 1, 1},
		{2, 2, 6, 3, 1, 0, 0, 2, 1},
	}
	for _, c := range cases {
		x := kerneltest.RandND(rng, -1, 1, 2, c.cin, c.l).Round32()
		w := kerneltest.RandND(rng, -1, 1, c.cin, c.cout/c.groups, c.k).Round32()
		bias := kerneltest.RandND(rng, -1, 1, c.cout).Round32()
		h := newHarness(t)
		y := h.in(x).ConvTranspose1d(h.in(w), h.in(bias), graph.ConvOpts{Stride: c.stride, Padding: c.pad, OutputPadding: c.outPad, Dilation: c.dil, Groups: c.groups})
		closeTo(t, "conv_transpose1d", h.eval(y)[0], kerneltest.ConvTranspose1d(x, w, bias.Data, c.stride, c.pad, c.pad, c.outPad, c.dil, c.groups), 1e-5)
	}
}

func TestLSTM(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	const T, B, I, H = 6, 2, 5, 4
	x := kerneltest.RandND(rng, -1, 1, T, B, I).Round32()
	w := func() (kerneltest.ND, kerneltest.ND, kerneltest.ND, kerneltest.ND) {
		return kerneltest.RandND(rng, -0.5, 0.5, 4*H, I).Round32(), kerneltest.RandND(rng, -0.5, 0.5, 4*H, H).Round32(),
			kerneltest.RandND(rng, -0.5, 0.5, 4*H).Round32(), kerneltest.RandND(rng, -0.5, 0.5, 4*H).Round32()
	}
	fwih, fwhh, fbih, fbhh := w()
	bwih, bwhh, bbih, bbhh := w()
	h0 := kerneltest.RandND(rng, -1, 1, 2, B, H).Round32()
	c0 := kerneltest.RandND(rng, -1, 1, 2, B, H).Round32()
	yf, hf, cf := kerneltest.LSTM(x, fwih, fwhh, fbih, fbhh, h0.Data[:B*H], c0.Data[:B*H], false)
	yb, hb, cb := kerneltest.LSTM(x, bwih, bwhh, bbih, bbhh, h0.Data[B*H:], c0.Data[B*H:], true)
	want := kerneltest.NewND(T, B, 2*H)
	for i := 0; i < T*B; i++ {
		copy(want.Data[i*2*H:], yf.Data[i*H:(i+1)*H])
		copy(want.Data[i*2*H+H:], yb.Data[i*H:(i+1)*H])
	}
	wantH := kerneltest.ND{Shape: []int{2, B, H}, Data: append(append([]float64(nil), hf...), hb...)}
	wantC := kerneltest.ND{Shape: []int{2, B, H}, Data: append(append([]float64(nil), cf...), cb...)}

	h := newHarness(t)
	fw := graph.LSTMWeights{WIH: h.in(fwih), WHH: h.in(fwhh), BIH: h.in(fbih), BHH: h.in(fbhh)}
	bw := graph.LSTMWeights{WIH: h.in(bwih), WHH: h.in(bwhh), BIH: h.in(bbih), BHH: h.in(bbhh)}
	xt := h.in(x)
	y, hn, cn := xt.LSTM(fw, &bw, h.in(h0), h.in(c0), false)
	// batch_first on a permuted input must agree.
	yb1, _, _ := xt.Permute(1, 0, 2).LSTM(fw, &bw, h.in(h0), h.in(c0), true)
	vals := h.eval(y, hn, cn, yb1.Permute(1, 0, 2))
	closeTo(t, "lstm y", vals[0], want, 1e-5)
	closeTo(t, "lstm hN", vals[1], wantH, 1e-5)
	closeTo(t, "lstm cN", vals[2], wantC, 1e-5)
	closeTo(t, "lstm y batch_first", vals[3], want, 1e-5)

	// Unidirectional with zero initial state.
	h = newHarness(t)
	fw = graph.LSTMWeights{WIH: h.in(fwih), WHH: h.in(fwhh), BIH: h.in(fbih), BHH: h.in(fbhh)}
	y1, _, _ := h.in(x).LSTM(fw, nil, graph.Tensor{}, graph.Tensor{}, false)
	yz, _, _ := kerneltest.LSTM(x, fwih, fwhh, fbih, fbhh, make([]float64, B*H), make([]float64, B*H), false)
	closeTo(t, "lstm unidirectional", h.eval(y1)[0], yz, 1e-5)
}
