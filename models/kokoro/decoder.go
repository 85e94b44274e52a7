package kokoro

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
)

// iSTFTNet generator sizes (config.json "istftnet").
const (
	nFFT        = 20 // gen_istft_n_fft
	hop         = 5  // gen_istft_hop_size
	specBins    = nFFT/2 + 1
	upTotal     = 10 * 6 // product of upsample_rates [10, 6]
	sourceScale = upTotal * hop
)

// decoder is Decoder: F0 and energy curves downsampled by strided convs,
// an encoding AdainResBlk1d over [asr, F0, N], four decoding blocks that
// see the residual features again (the last upsamples ×2), then the
// generator. asr is [1, 512, F], f0 and nrg [1, 2F], har the source
// spectrogram [1, 22, 120F+1] (see harmonicSpectrum); s is the timbre half
// of the style [1, 128]. It returns the waveform [1, 600F].
func (n *net) decoder(asr, f0, nrg, har, s graph.Tensor) graph.Tensor {
	down := graph.ConvOpts{Stride: 2, Padding: 1}
	F0 := n.conv1d("decoder.F0_conv", f0.Unsqueeze(1), true, down) // [1, 1, F]
	N := n.conv1d("decoder.N_conv", nrg.Unsqueeze(1), true, down)
	x := n.adainResBlk1d("decoder.encode", graph.Concat(1, asr, F0, N), s, false)
	asrRes := n.conv1d("decoder.asr_res.0", asr, true, graph.ConvOpts{})
	for i := range 4 {
		x = graph.Concat(1, x, asrRes, F0, N)
		x = n.adainResBlk1d("decoder.decode."+itoa(i), x, s, i == 3)
	}
	return n.generator(x, s, har)
}

// adaINSnake is AdaIN1d followed by the Snake1D activation
// x + sin²(αx)/α (α learned per channel), folded into fewer passes over
// the long generator sequences: with u = α·x = α(1+γ)·norm(x) + αβ, the
// instance norm's own affine produces u, and the snake is (u + sin²u)/α.
func (n *net) adaINSnake(adaPre, alphaName string, x, s graph.Tensor) graph.Tensor {
	C := x.Dim(1)
	h := n.linear(adaPre+".fc", s).Reshape(2 * C)
	a := n.p(alphaName).Reshape(C)
	w := h.Slice(0, 0, C).AddScalar(1).Mul(a)
	b := h.Slice(0, C, 2*C).Mul(a)
	u := x.InstanceNorm(w, b, 1e-5)
	su := u.Sin()
	return u.Add(su.Mul(su)).Mul(a.Reciprocal().Reshape(1, C, 1))
}

// adainResBlock1 is AdaINResBlock1: three rounds of AdaIN → Snake →
// dilated conv → AdaIN → Snake → conv, each added to its input.
func (n *net) adainResBlock1(pre string, x, s graph.Tensor, k int, dil [3]int) graph.Tensor {
	for j := range 3 {
		js := itoa(j)
		// convs1's bias is left out (the instance norm after it removes
		// per-channel constants); convs2's is added by the convolution.
		xt := n.adaINSnake(pre+".adain1."+js, pre+".alpha1."+js, x, s)
		xt = n.conv1d(pre+".convs1."+js, xt, false, graph.ConvOpts{Dilation: dil[j], Padding: (k*dil[j] - dil[j]) / 2})
		xt = n.adaINSnake(pre+".adain2."+js, pre+".alpha2."+js, xt, s)
		x = n.conv1d(pre+".convs2."+js, xt, true, graph.ConvOpts{Padding: (k - 1) / 2}).Add(x)
	}
	return x
}

// generator is the iSTFTNet Generator: two upsampling stages (transposed
// convs ×10 and ×6), each joined by the harmonic source brought to its
// rate (noise_convs, noise_res) and followed by the mean of three residual
// blocks (kernels 3, 7, 11); then conv_post to 11 log-magnitudes and 11
// phases, and the inverse STFT.
func (n *net) generator(x, s, har graph.Tensor) graph.Tensor {
	const g = "decoder.generator."
	kernelsizes := [3]int{3, 7, 11}
	dil := [3]int{1, 3, 5}
	ups := []graph.ConvOpts{{Stride: 10, Padding: 5}, {Stride: 6, Padding: 3}}
	noise := []graph.ConvOpts{{Stride: 6, Padding: 3}, {}}
	noiseK := []int{7, 11}
	for i := range 2 {
		is := itoa(i)
		x = x.LeakyRelu(0.1)
		src := n.conv1d(g+"noise_convs."+is, har, true, noise[i])
		src = n.adainResBlock1(g+"noise_res."+is, src, s, noiseK[i], dil)
		x = n.convTranspose1d(g+"ups."+is, x, ups[i])
		if i == 1 {
			x = x.Pad1d(kernels.PadReflect, 1, 0)
		}
		x = x.Add(src)
		var xs graph.Tensor
		for j, k := range kernelsizes {
			r := n.adainResBlock1(g+"resblocks."+itoa(3*i+j), x, s, k, dil)
			if j == 0 {
				xs = r
			} else {
				xs = xs.Add(r)
			}
		}
		x = xs.Div(n.scalar(3))
	}
	x = n.conv1d(g+"conv_post", x.LeakyRelu(0.01), true, graph.ConvOpts{Padding: 3}) // [1, 22, L]
	spec := x.Slice(1, 0, specBins).Exp()
	phase := x.Slice(1, specBins, 2*specBins).Sin()
	return n.istft(spec, phase)
}

// istft is the export's inverse STFT: real and imaginary parts through a
// transposed convolution with the windowed inverse-DFT basis (stride hop),
// the first samples divided by the window's overlap sum, a gain of
// n_fft/hop, and n_fft/2 samples trimmed from both ends. Only the first
// n_fft samples are normalised, as in the export; in the steady state the
// Hann² overlap sum is constant and folded into the gain.
func (n *net) istft(spec, phase graph.Tensor) graph.Tensor {
	const g = "decoder.generator.stft.istft.stft."
	re := spec.Mul(phase.Cos())
	im := spec.Mul(phase.Sin())
	y := graph.Concat(1, re, im).ConvTranspose1d(n.p(g+"inverse_basis"), graph.Tensor{}, graph.ConvOpts{Stride: hop}) // [1, 1, (L−1)·hop + n_fft]
	total := y.Dim(2)
	half := nFFT / 2
	head := y.Slice(2, half, nFFT).Div(n.p(g+"window_sum").Slice(0, half, nFFT))
	tail := y.Slice(2, nFFT, total-half)
	return graph.Concat(2, head, tail).MulScalar(float64(nFFT/hop)).Reshape(1, -1)
}
