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
// The arithmetic is the module's, not onnxruntime's: the STFT is an exact
// DFT (a strided convolution with the windowed basis), so bins that are
// zero in exact arithmetic get the phase the export's formula gives zero
// (0, or −π where the real part is negative) rather than the sign of
// onnxruntime's rounding noise. The generator reads those phases; on the
// CPU that moves the goldens' waveform to Pearson 0.93 (log-spectral RMS
// 0.26–0.29, reports/2026-12-07-kokoro-cpu.md), which is why the CPU keeps
// harmonicSpectrum. A device misses the noise either way: an F0 that
// differs in its last bits flips the same signs.
func (m *generator) harmonic(f0 graph.Tensor, lo, hi int) graph.Tensor {
	g := f0.Graph()
	n2 := f0.Dim(1)
	samples := n2 * sourceScale

	// SineGen: each harmonic's phase increment per sample, in turns
	// modulo 1, constant over an F0 value's 300 samples; averaged down to
	// the F0 rate it is that constant, which is summed there and brought
	// back up by linear interpolation (half-pixel centres).
	mult := make([]float32, harmonics)
	for h := range mult {
		mult[h] = float32(h+1) / SampleRate
	}
	rad := f0.Unsqueeze(1).Mul(g.ConstF32(graph.Shape{1, harmonics, 1}, mult)) // [1, 9, n2]
	rad = rad.Sub(rad.Floor())
	phase := rad.Cumsum(2, false, false).MulScalar(2 * math.Pi * sourceScale)
	at := g.Arange(0.5/sourceScale-0.5, 1.0/sourceScale, samples, graph.F32).Clamp(0, float64(n2-1))
	x1 := at.Floor()
	frac := at.Sub(x1)
	i1 := x1.Cast(graph.I64)
	i2 := x1.AddScalar(1).Clamp(0, float64(n2-1)).Cast(graph.I64)
	p1, p2 := phase.Gather(2, i1), phase.Gather(2, i2) // [1, 9, samples]
	up := p1.Add(p2.Sub(p1).Mul(frac))

	// The sines where the F0 is voiced, merged by l_linear and tanh.
	voiced := f0.Unsqueeze(2).Expand(graph.Shape{1, n2, sourceScale}).Reshape(1, 1, samples).Gt(g.Scalar(voicedThreshold, graph.F32))
	sines := graph.Where(voiced, up.Sin().MulScalar(sineAmp), g.Scalar(0, graph.F32))                            // [1, 9, samples]
	src := m.lLinearW.In(g).MatMul(sines.Reshape(harmonics, samples)).Add(m.lLinearB.In(g).Reshape(1, 1)).Tanh() // [1, samples]

	// TorchSTFT.transform: reflect padding, Hann window, one-sided DFT.
	win := stftWindow()
	basis := make([]float32, 2*specBins*nFFT)
	for k := range specBins {
		for i := range nFFT {
			a := 2 * math.Pi * float64(k*i) / nFFT
			basis[k*nFFT+i] = float32(float64(win[i]) * math.Cos(a))
			basis[(specBins+k)*nFFT+i] = float32(-float64(win[i]) * math.Sin(a))
		}
	}
	spec := src.Reshape(1, 1, samples).Pad1d(kernels.PadReflect, nFFT/2, nFFT/2).
		Conv1d(g.ConstF32(graph.Shape{2 * specBins, 1, nFFT}, basis), graph.Tensor{}, graph.ConvOpts{Stride: hop}) // [1, 22, samples/hop+1]
	per := SamplesPerFrame / hop
	spec = spec.Narrow(2, lo*per, (hi-lo)*per+1)
	re, im := spec.Narrow(1, 0, specBins), spec.Narrow(1, specBins, specBins)
	mag := re.Mul(re).Add(im.Mul(im)).Sqrt()
	return graph.Concat(1, mag, exportAngle(re, im))
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
