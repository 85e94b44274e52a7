package kokoro

import (
	"strconv"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/models/param"
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
// generator. bf16 (the default, see Model.Float32) lets every convolution
// of the decoder and generator run in bfloat16.
type decoder struct {
	f0Conv, nConv conv1d // F0_conv, N_conv
	encode        adainResBlk1d
	asrRes        conv1d // asr_res.0
	decode        [4]adainResBlk1d
	generator     generator
}

func newDecoder(s *param.Scope, bf16 bool) decoder {
	down := graph.ConvOpts{Stride: 2, Padding: 1}
	d := decoder{
		f0Conv:    newConv1d(s.Sub("F0_conv"), true, down, bf16),
		nConv:     newConv1d(s.Sub("N_conv"), true, down, bf16),
		encode:    newAdainResBlk1d(s.Sub("encode"), false, bf16),
		asrRes:    newConv1d(s.Sub("asr_res").Index(0), true, graph.ConvOpts{}, bf16),
		generator: newGenerator(s.Sub("generator"), bf16),
	}
	for i := range d.decode {
		d.decode[i] = newAdainResBlk1d(s.Sub("decode").Index(i), i == 3, bf16)
	}
	return d
}

// features is the decoder before its generator: from asr [1, 512, F], f0
// and nrg [1, 2F] and s the timbre half of the style [1, 128], the
// features [1, 512, 2F] that the generator upsamples to audio. The whole
// Decoder is generator.forward(features(asr, f0, nrg, s), s,
// generator.sources(har, s)), with har the source spectrogram (see
// harmonicSpectrum); Model.runDecoder runs the three as graphs of their
// own.
func (m *decoder) features(asr, f0, nrg, s graph.Tensor) graph.Tensor {
	F0 := m.f0Conv.forward(f0.Unsqueeze(1)) // [1, 1, F]
	N := m.nConv.forward(nrg.Unsqueeze(1))
	x := m.encode.forward(graph.Concat(1, asr, F0, N), s)
	asrRes := m.asrRes.forward(asr)
	for i := range m.decode {
		x = graph.Concat(1, x, asrRes, F0, N)
		x = m.decode[i].forward(x, s)
	}
	return x
}

// adaINSnake is AdaIN1d followed by the Snake1D activation
// x + sin²(αx)/α (α learned per channel), folded into fewer passes over
// the long generator sequences: with u = α·x = α(1+γ)·norm(x) + αβ, the
// instance norm's own affine produces u, and the snake is (u + sin²u)/α.
type adaINSnake struct {
	fc    linear       // adainK.j.fc
	alpha param.Tensor // alphaK.j [1, C, 1]
}

func newAdaINSnake(s *param.Scope, adain, alpha string, j int) adaINSnake {
	fc := newLinear(s.Sub(adain).Index(j).Sub("fc"))
	return adaINSnake{fc: fc, alpha: s.Sub(alpha).F32(strconv.Itoa(j), 1, -1, 1)}
}

func (m *adaINSnake) forward(x, s graph.Tensor) graph.Tensor {
	C := x.Dim(1)
	h := m.fc.forward(s).Reshape(2 * C)
	a := m.alpha.In(x.Graph()).Reshape(C)
	w := h.Slice(0, 0, C).AddScalar(1).Mul(a)
	b := h.Slice(0, C, 2*C).Mul(a)
	u := x.InstanceNorm(w, b, 1e-5)
	su := u.Sin()
	return u.Add(su.Mul(su)).Mul(a.Reciprocal().Reshape(1, C, 1))
}

// adainResBlock1 is AdaINResBlock1: three rounds of AdaIN → Snake →
// dilated conv → AdaIN → Snake → conv, each added to its input.
type adainResBlock1 struct {
	round [3]struct {
		snake1, snake2 adaINSnake
		conv1, conv2   conv1d // convs1.j, convs2.j
	}
}

func newAdainResBlock1(s *param.Scope, k int, dil [3]int, bf16 bool) adainResBlock1 {
	var b adainResBlock1
	for j := range b.round {
		r := &b.round[j]
		r.snake1 = newAdaINSnake(s, "adain1", "alpha1", j)
		r.snake2 = newAdaINSnake(s, "adain2", "alpha2", j)
		// convs1's bias is left out (the instance norm after it removes
		// per-channel constants); convs2's is added by the convolution.
		r.conv1 = newConv1d(s.Sub("convs1").Index(j), false, graph.ConvOpts{Dilation: dil[j], Padding: (k*dil[j] - dil[j]) / 2}, bf16)
		r.conv2 = newConv1d(s.Sub("convs2").Index(j), true, graph.ConvOpts{Padding: (k - 1) / 2}, bf16)
	}
	return b
}

func (m *adainResBlock1) forward(x, s graph.Tensor) graph.Tensor {
	for j := range m.round {
		r := &m.round[j]
		xt := r.snake1.forward(x, s)
		xt = r.conv1.forward(xt)
		xt = r.snake2.forward(xt, s)
		x = r.conv2.forward(xt).Add(x)
	}
	return x
}

// generator is the iSTFTNet Generator: two upsampling stages (transposed
// convs ×10 and ×6), each joined by the harmonic source brought to its
// rate (noise_convs, noise_res) and followed by the mean of three residual
// blocks (kernels 3, 7, 11); then conv_post to 11 log-magnitudes and 11
// phases, and the inverse STFT. The harmonic source itself (m_source) runs
// on the host: lLinear holds its l_linear.
type generator struct {
	ups        [2]convTranspose1d
	noiseConvs [2]conv1d
	noiseRes   [2]adainResBlock1
	resblocks  [6]adainResBlock1
	convPost   conv1d
	// stft.istft.stft: the windowed inverse-DFT basis [22, 1, 20] and the
	// window's overlap sum [20].
	inverseBasis, windowSum param.Tensor
	lLinearW, lLinearB      param.Tensor // m_source.l_linear [1, 9], [1]
}

func newGenerator(s *param.Scope, bf16 bool) generator {
	kernelSizes := [3]int{3, 7, 11}
	dil := [3]int{1, 3, 5}
	ups := []graph.ConvOpts{{Stride: 10, Padding: 5}, {Stride: 6, Padding: 3}}
	noise := []graph.ConvOpts{{Stride: 6, Padding: 3}, {}}
	noiseK := []int{7, 11}
	istft := s.Sub("stft.istft.stft")
	lin := s.Sub("m_source.l_linear")
	g := generator{
		convPost:     newConv1d(s.Sub("conv_post"), true, graph.ConvOpts{Padding: 3}, bf16),
		inverseBasis: istft.F32("inverse_basis", 2*specBins, 1, nFFT),
		windowSum:    istft.F32("window_sum", nFFT),
		lLinearW:     lin.F32("weight", 1, harmonics),
		lLinearB:     lin.F32("bias", 1),
	}
	for i := range 2 {
		g.ups[i] = newConvTranspose1d(s.Sub("ups").Index(i), ups[i], bf16)
		g.noiseConvs[i] = newConv1d(s.Sub("noise_convs").Index(i), true, noise[i], bf16)
		g.noiseRes[i] = newAdainResBlock1(s.Sub("noise_res").Index(i), noiseK[i], dil, bf16)
		for j, k := range kernelSizes {
			g.resblocks[3*i+j] = newAdainResBlock1(s.Sub("resblocks").Index(3*i+j), k, dil, bf16)
		}
	}
	return g
}

// sources is the generator's harmonic branch: the source spectrogram har
// brought to the rate of each upsampling stage (noise_convs, noise_res).
// It does not read the decoder's features.
func (m *generator) sources(har, s graph.Tensor) [2]graph.Tensor {
	var src [2]graph.Tensor
	for i := range src {
		src[i] = m.noiseRes[i].forward(m.noiseConvs[i].forward(har), s)
	}
	return src
}

// forward maps the decoder's features x, the timbre style s and the
// sources (see sources) to the waveform.
func (m *generator) forward(x, s graph.Tensor, src [2]graph.Tensor) graph.Tensor {
	for i := range 2 {
		x = x.LeakyRelu(0.1)
		x = m.ups[i].forward(x)
		if i == 1 {
			x = x.Pad1d(kernels.PadReflect, 1, 0)
		}
		x = x.Add(src[i])
		var xs graph.Tensor
		for j := range 3 {
			r := m.resblocks[3*i+j].forward(x, s)
			if j == 0 {
				xs = r
			} else {
				xs = xs.Add(r)
			}
		}
		x = xs.Div(scalar(xs, 3))
	}
	x = m.convPost.forward(x.LeakyRelu(0.01)) // [1, 22, L]
	spec := x.Slice(1, 0, specBins).Exp()
	phase := x.Slice(1, specBins, 2*specBins).Sin()
	return m.istft(spec, phase)
}

// istft is the export's inverse STFT: real and imaginary parts through a
// transposed convolution with the windowed inverse-DFT basis (stride hop),
// the first samples divided by the window's overlap sum, a gain of
// n_fft/hop, and n_fft/2 samples trimmed from both ends. Only the first
// n_fft samples are normalised, as in the export; in the steady state the
// Hann² overlap sum is constant and folded into the gain.
func (m *generator) istft(spec, phase graph.Tensor) graph.Tensor {
	g := spec.Graph()
	re := spec.Mul(phase.Cos())
	im := spec.Mul(phase.Sin())
	y := graph.Concat(1, re, im).ConvTranspose1d(m.inverseBasis.In(g), graph.Tensor{}, graph.ConvOpts{Stride: hop}) // [1, 1, (L−1)·hop + n_fft]
	total := y.Dim(2)
	half := nFFT / 2
	head := y.Slice(2, half, nFFT).Div(m.windowSum.In(g).Slice(0, half, nFFT))
	tail := y.Slice(2, nFFT, total-half)
	return graph.Concat(2, head, tail).MulScalar(float64(nFFT/hop)).Reshape(1, -1)
}
