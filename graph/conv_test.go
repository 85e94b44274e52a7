package graph_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/graph"
)

func refConv1d(x, w nd, b []float64, stride, padL, padR, dil, groups int) nd {
	N, Cin, L := x.shape[0], x.shape[1], x.shape[2]
	Cout, cig, K := w.shape[0], w.shape[1], w.shape[2]
	Lout := (L+padL+padR-dil*(K-1)-1)/stride + 1
	cog := Cout / groups
	out := newND(N, Cout, Lout)
	for n := 0; n < N; n++ {
		for co := 0; co < Cout; co++ {
			g := co / cog
			for t := 0; t < Lout; t++ {
				s := 0.0
				if b != nil {
					s = b[co]
				}
				for ci := 0; ci < cig; ci++ {
					for k := 0; k < K; k++ {
						i := t*stride + k*dil - padL
						if i >= 0 && i < L {
							s += w.data[(co*cig+ci)*K+k] * x.data[(n*Cin+g*cig+ci)*L+i]
						}
					}
				}
				out.data[(n*Cout+co)*Lout+t] = s
			}
		}
	}
	return out
}

func refConvT1d(x, w nd, b []float64, stride, pad, outPad, dil, groups int) nd {
	N, Cin, L := x.shape[0], x.shape[1], x.shape[2]
	cog, K := w.shape[1], w.shape[2]
	cig := Cin / groups
	Cout := cog * groups
	Lout := (L-1)*stride - 2*pad + dil*(K-1) + outPad + 1
	out := newND(N, Cout, Lout)
	for n := 0; n < N; n++ {
		for co := 0; co < Cout; co++ {
			for t := 0; t < Lout; t++ {
				if b != nil {
					out.data[(n*Cout+co)*Lout+t] = b[co]
				}
			}
		}
		for ci := 0; ci < Cin; ci++ {
			g := ci / cig
			for i := 0; i < L; i++ {
				for c := 0; c < cog; c++ {
					co := g*cog + c
					for k := 0; k < K; k++ {
						t := i*stride + k*dil - pad
						if t >= 0 && t < Lout {
							out.data[(n*Cout+co)*Lout+t] += x.data[(n*Cin+ci)*L+i] * w.data[(ci*cog+c)*K+k]
						}
					}
				}
			}
		}
	}
	return out
}

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
		x := randND(rng, -1, 1, c.n, c.cin, c.l).round32()
		w := randND(rng, -1, 1, c.cout, c.cin/c.groups, c.k).round32()
		var bias nd
		var bdata []float64
		if c.bias {
			bias = randND(rng, -1, 1, c.cout).round32()
			bdata = bias.data
		}
		h := newHarness(t)
		bt := graph.Tensor{}
		if c.bias {
			bt = h.in(bias)
		}
		y := h.in(x).Conv1d(h.in(w), bt, graph.ConvOpts{Stride: c.stride, PadLeft: c.padL, PadRight: c.padR, Dilation: c.dil, Groups: c.groups})
		closeTo(t, "conv1d", h.eval(y)[0], refConv1d(x, w, bdata, c.stride, c.padL, c.padR, c.dil, c.groups), 1e-5)
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
		x := randND(rng, -1, 1, 2, c.cin, c.l).round32()
		w := randND(rng, -1, 1, c.cin, c.cout/c.groups, c.k).round32()
		bias := randND(rng, -1, 1, c.cout).round32()
		h := newHarness(t)
		y := h.in(x).ConvTranspose1d(h.in(w), h.in(bias), graph.ConvOpts{Stride: c.stride, Padding: c.pad, OutputPadding: c.outPad, Dilation: c.dil, Groups: c.groups})
		closeTo(t, "conv_transpose1d", h.eval(y)[0], refConvT1d(x, w, bias.data, c.stride, c.pad, c.outPad, c.dil, c.groups), 1e-5)
	}
}

func refLSTM(x nd, wih, whh, bih, bhh nd, h0, c0 []float64, reverse bool) (y nd, h, c []float64) {
	T, B, I := x.shape[0], x.shape[1], x.shape[2]
	H := whh.shape[1]
	y = newND(T, B, H)
	h = append([]float64(nil), h0...)
	c = append([]float64(nil), c0...)
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for s := 0; s < T; s++ {
		t := s
		if reverse {
			t = T - 1 - s
		}
		nh := make([]float64, B*H)
		for b := 0; b < B; b++ {
			gates := make([]float64, 4*H)
			for g := 0; g < 4*H; g++ {
				v := bih.data[g] + bhh.data[g]
				for i := 0; i < I; i++ {
					v += wih.data[g*I+i] * x.data[(t*B+b)*I+i]
				}
				for j := 0; j < H; j++ {
					v += whh.data[g*H+j] * h[b*H+j]
				}
				gates[g] = v
			}
			for j := 0; j < H; j++ {
				ig, fg, gg, og := sig(gates[j]), sig(gates[H+j]), math.Tanh(gates[2*H+j]), sig(gates[3*H+j])
				c[b*H+j] = fg*c[b*H+j] + ig*gg
				nh[b*H+j] = og * math.Tanh(c[b*H+j])
				y.data[(t*B+b)*H+j] = nh[b*H+j]
			}
		}
		h = nh
	}
	return y, h, c
}

func TestLSTM(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	const T, B, I, H = 6, 2, 5, 4
	x := randND(rng, -1, 1, T, B, I).round32()
	w := func() (nd, nd, nd, nd) {
		return randND(rng, -0.5, 0.5, 4*H, I).round32(), randND(rng, -0.5, 0.5, 4*H, H).round32(),
			randND(rng, -0.5, 0.5, 4*H).round32(), randND(rng, -0.5, 0.5, 4*H).round32()
	}
	fwih, fwhh, fbih, fbhh := w()
	bwih, bwhh, bbih, bbhh := w()
	h0 := randND(rng, -1, 1, 2, B, H).round32()
	c0 := randND(rng, -1, 1, 2, B, H).round32()
	yf, hf, cf := refLSTM(x, fwih, fwhh, fbih, fbhh, h0.data[:B*H], c0.data[:B*H], false)
	yb, hb, cb := refLSTM(x, bwih, bwhh, bbih, bbhh, h0.data[B*H:], c0.data[B*H:], true)
	want := newND(T, B, 2*H)
	for i := 0; i < T*B; i++ {
		copy(want.data[i*2*H:], yf.data[i*H:(i+1)*H])
		copy(want.data[i*2*H+H:], yb.data[i*H:(i+1)*H])
	}
	wantH := nd{shape: []int{2, B, H}, data: append(append([]float64(nil), hf...), hb...)}
	wantC := nd{shape: []int{2, B, H}, data: append(append([]float64(nil), cf...), cb...)}

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
	yz, _, _ := refLSTM(x, fwih, fwhh, fbih, fbhh, make([]float64, B*H), make([]float64, B*H), false)
	closeTo(t, "lstm unidirectional", h.eval(y1)[0], yz, 1e-5)
}
