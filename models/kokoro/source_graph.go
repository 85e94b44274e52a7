package kokoro

import (
	"math"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
)

// harmonic is the generator's source as graph ops, for devices: the
// harmonic source (SourceModuleHnNSF as exported, see harmonicSource) and
// its STFT (TorchSTFT.transform, see stftMagPhase), so that a GPU builds
// it where the generator reads it instead of the host building it between
// two programs. f0 is a chunk's whole F0 curve [1, 2F]; the result is the
// source spectrogram of its frames [lo, hi), [1, 22, 120·(hi−lo)+1], whose
// phase runs on from the chunk's start.
//
// The arithmetic is the module's, not onnxruntime's. The STFT is an exact
// DFT (a strided convolution with the windowed basis), and bins that are
// zero in exact arithmetic (see quietBin) get the phase the export's
// formula gives zero (0, or −π where the real part is negative) rather
// than the sign of onnxruntime's rounding noise; the running phase is kept
// below a turn (see wrappedCumsum) rather than rounded as a float32 sum of
// thousands of turns. The generator reads those phases; on the CPU that
// moves the goldens' waveform to Pearson 0.94 (log-spectral RMS
// 0.26–0.28, reports/2026-12-07-kokoro-cpu.md), which is why the CPU keeps
// harmonicSpectrum. A device cannot reproduce the noise: an F0 that
// differs in its last bits flips the same signs. What this arithmetic buys
// is a source that another summation order barely moves: the benchmark
// paragraph's waveform between the CPU's Go and OpenBLAS product paths is
// at Pearson 0.9994 with it, 0.865 with the host's (TestGraphSourceStable).
func (m *generator) harmonic(f0 graph.Tensor, lo, hi int) graph.Tensor {
	g := f0.Graph()
	n2 := f0.Dim(1)
	samples := n2 * sourceScale

	// SineGen: each harmonic's phase increment per sample, in turns
	// modulo 1, constant over an F0 value's 300 samples; averaged down to
	// the F0 rate it is that constant, which is summed there and brought
	// back up by linear interpolation (half-pixel centres). The export sums
	// the turns themselves, up to ~10⁴ for a 10-s chunk's ninth harmonic,
	// where a float32 ulp is ~10⁻² rad, and an ulp moved by another
	// summation order moves the STFT phase's wraps from +π to −π (see
	// wrappedCumsum); only the sum's fraction matters, so it is kept
	// below a turn.
	mult := make([]float32, harmonics)
	for h := range mult {
		mult[h] = float32(h+1) / SampleRate
	}
	rad := f0.Unsqueeze(1).Mul(g.ConstF32(graph.Shape{1, harmonics, 1}, mult)) // [1, 9, n2]
	rad = fracPart(rad)
	step := rad.MulScalar(sourceScale) // turns over one F0 value's samples
	turns := wrappedCumsum(fracPart(step))
	next := step.Pad1d(kernels.PadConstant, 0, 1).Narrow(2, 1, n2) // the next F0 value's turns, 0 past the last
	up := upsampleTurns(turns, next)                               // [1, 9, samples]
	up = fracPart(up).MulScalar(2 * math.Pi)

	// The sines where the F0 is voiced, merged by l_linear and tanh.
	voiced := f0.Unsqueeze(2).Expand(graph.Shape{1, n2, sourceScale}).Reshape(1, 1, samples).Gt(g.Scalar(voicedThreshold, graph.F32))
	sines := graph.Where(voiced, up.Sin().MulScalar(sineAmp), g.Scalar(0, graph.F32))                            // [1, 9, samples]
	src := m.lLinearW.In(g).MatMul(sines.Reshape(harmonics, samples)).Add(m.lLinearB.In(g).Reshape(1, 1)).Tanh() // [1, samples]

	// TorchSTFT.transform: reflect padding, Hann window, one-sided DFT.
	win := stftWindow()
	basis := make([]float32, 2*specBins*nFFT)
	for k := range specBins {
		for i := range nFFT {
			basis[k*nFFT+i], basis[(specBins+k)*nFFT+i] = dftTerm(win[i], k, i)
		}
	}
	x := src.Reshape(1, 1, samples).Pad1d(kernels.PadReflect, nFFT/2, nFFT/2)
	spec := x.Conv1d(g.ConstF32(graph.Shape{2 * specBins, 1, nFFT}, basis), graph.Tensor{}, graph.ConvOpts{Stride: hop}) // [1, 22, samples/hop+1]
	// A component within rounding of zero is zero: see quietBin.
	scale := x.Abs().Conv1d(g.ConstF32(graph.Shape{1, 1, nFFT}, win[:]), graph.Tensor{}, graph.ConvOpts{Stride: hop}) // Σ|x·w| a frame
	spec = graph.Where(spec.Abs().Le(scale.MulScalar(quietBin)), g.Scalar(0, graph.F32), spec)
	per := SamplesPerFrame / hop
	spec = spec.Narrow(2, lo*per, (hi-lo)*per+1)
	re, im := spec.Narrow(1, 0, specBins), spec.Narrow(1, specBins, specBins)
	mag := re.Mul(re).Add(im.Mul(im)).Sqrt()
	return graph.Concat(1, mag, exportAngle(re, im))
}

// upsampleTurns interpolates the running turns [1, H, n] (with next, each
// F0 value's increment, 0 past the last) up to the sample rate, at
// half-pixel centres clamped to the ends: sample s = j·sourceScale + k
// sits at j + c(k), c(k) = (k + ½)/sourceScale − ½, between F0 values j−1
// and j where c(k) < 0 (the first half of the value's samples), j and j+1
// after. So the turns are those of j or j−1 and the fraction depends on k
// alone: sourceScale weights, one constant for every length, selected and
// broadcast in one elementwise step. Positions as one float32 ramp over
// the samples (the export's arange) would round the fraction to the ulp
// of j (6·10⁻⁵ at a 10-s chunk's 860 values) and make a constant of the
// chunk's length (1 MB for 10 s), built and hashed on the host for every
// chunk and kept on the device for every length met.
func upsampleTurns(turns, next graph.Tensor) graph.Tensor {
	g := turns.Graph()
	h, n := turns.Dim(1), turns.Dim(2)
	low := make([]byte, sourceScale)
	frac := make([]float32, sourceScale)
	for k := range sourceScale {
		c := (float64(k) + 0.5) / sourceScale
		if c < 0.5 {
			low[k], frac[k] = 1, float32(c+0.5)
		} else {
			frac[k] = float32(c - 0.5)
		}
	}
	isLow := g.Const(graph.Bool, graph.Shape{1, 1, 1, sourceScale}, low)
	f := g.ConstF32(graph.Shape{1, 1, 1, sourceScale}, frac)
	// Value j−1's turns and increment at j (at j = 0 the clamp leaves the
	// first turns alone: no increment).
	prevTurns := turns.Pad1d(kernels.PadReplicate, 1, 0).Narrow(2, 0, n)
	prevNext := next.Pad1d(kernels.PadConstant, 1, 0).Narrow(2, 0, n)
	base := graph.Where(isLow, prevTurns.Unsqueeze(3), turns.Unsqueeze(3))
	inc := graph.Where(isLow, prevNext.Unsqueeze(3), next.Unsqueeze(3))
	return base.Add(inc.Mul(f)).Reshape(1, h, n*sourceScale)
}

// wrappedCumsum is the inclusive cumulative sum along the last axis of x
// [1, H, n] (values in [0, 1)) modulo 1, summed in blocks of about √n so
// that no partial sum exceeds about √n: within ~10⁻⁵ of a turn where a
// plain float32 cumsum of 10⁴ turns is within 10⁻³.
func wrappedCumsum(x graph.Tensor) graph.Tensor {
	h, n := x.Dim(1), x.Dim(2)
	b := int(math.Ceil(math.Sqrt(float64(n))))
	nb := (n + b - 1) / b
	if pad := nb*b - n; pad > 0 {
		x = x.Pad1d(kernels.PadConstant, 0, pad)
	}
	local := x.Reshape(1, h, nb, b).Cumsum(3, false, false) // < b
	sums := local.Narrow(3, b-1, 1)
	sums = fracPart(sums)
	off := sums.Cumsum(2, true, false) // < nb
	c := local.Add(fracPart(off))
	return fracPart(c).Reshape(1, h, nb*b).Narrow(2, 0, n)
}

// fracPart is x − ⌊x⌋: turns taken modulo one turn.
func fracPart(x graph.Tensor) graph.Tensor { return x.Sub(x.Floor()) }

// quietBin bounds, relative to a frame's Σ|x·w|, the components of its
// DFT taken as zero. Bins that are zero in exact arithmetic (every bin
// above the first of a constant frame, as SineGen's unvoiced stretches
// are: tanh of l_linear's bias) come out of the float32 sums as rounding
// noise, about 1e-7 of that sum, and the export's angle turns the noise's
// sign into a phase of 0, ±π/2 or ±π, which the generator reads: any
// change of summation order (a GPU's, another BLAS's) flipped them, and
// with them the waveform (the benchmark paragraph: Pearson 0.93 between
// two CPU product paths). Taken as zero they get the formula's phase for
// zero, as the module's exact arithmetic would. A genuine component this
// small is rare and its phase is the one its larger partner gives.
const quietBin = 1e-5

// dftTerm returns the real and imaginary DFT basis terms of bin k at point
// i, windowed by w, with the zeros of the sine and cosine (multiples of
// π, odd multiples of π/2) exact.
func dftTerm(w float32, k, i int) (re, im float32) {
	a := 2 * math.Pi * float64(k*i) / nFFT
	c, s := math.Cos(a), math.Sin(a)
	if (2*k*i)%nFFT == 0 {
		s = 0
	}
	if (4*k*i)%nFFT == 0 && (4*k*i/nFFT)%2 == 1 {
		c = 0
	}
	return float32(float64(w) * c), float32(-float64(w) * s)
}

// exportAngle is exportPhase on tensors: atan(im/re), moved by ±π where
// re < 0 (+π when im > 0, else −π), and 0 where both are zero.
func exportAngle(re, im graph.Tensor) graph.Tensor {
	g := re.Graph()
	zero := g.Scalar(0, graph.F32)
	a := atan(im.Div(re))
	turn := graph.Where(im.Gt(zero), g.Scalar(math.Pi, graph.F32), g.Scalar(-math.Pi, graph.F32))
	a = graph.Where(re.Lt(zero), a.Add(turn), a)
	return graph.Where(re.Eq(zero).And(im.Eq(zero)), zero, a)
}

// atan is the arctangent by Cephes' atanf: the argument reduced to
// |x| ≤ tan(π/8) by atan(x) = π/2 + atan(−1/x) above tan(3π/8) and
// π/4 + atan((x−1)/(x+1)) above tan(π/8), then a polynomial, within a
// few float32 ulps; ±Inf gives ±π/2.
func atan(x graph.Tensor) graph.Tensor {
	g := x.Graph()
	c := func(v float64) graph.Tensor { return g.Scalar(v, graph.F32) }
	ax := x.Abs()
	big, mid := ax.Gt(c(2.414213562373095)), ax.Gt(c(0.4142135623730950))
	r := graph.Where(big, c(-1).Div(ax), graph.Where(mid, ax.AddScalar(-1).Div(ax.AddScalar(1)), ax))
	y0 := graph.Where(big, c(math.Pi/2), graph.Where(mid, c(math.Pi/4), c(0)))
	z := r.Mul(r)
	p := z.MulScalar(8.05374449538e-2).AddScalar(-1.38776856032e-1).Mul(z).AddScalar(1.99777106478e-1).Mul(z).AddScalar(-3.33329491539e-1)
	y := y0.Add(p.Mul(z).Mul(r).Add(r))
	return y.Mul(x.Sign())
}
