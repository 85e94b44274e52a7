package kokoro

import (
	"math"
	"runtime"
	"sync"
)

// Harmonic source constants (istftnet.py SourceModuleHnNSF / SineGen).
const (
	harmonics       = 9    // harmonic_num 8 plus the fundamental
	sineAmp         = 0.1  // sine_amp
	voicedThreshold = 10.0 // voiced_threshod: F0 above this is voiced
)

// harmonicSpectrum computes the generator's excitation as the export does,
// on the host: SineGen on the F0 curve upsampled to the audio rate, merged
// by l_linear and tanh, then its STFT (n_fft 20, hop 5, periodic Hann,
// reflect padding) as 11 magnitudes and 11 phases per frame.
//
// The export differs from the PyTorch module in three ways that this
// mirrors: there is no noise (the graph has no random ops: the additive
// noise and the random initial phase are gone), the per-sample phase
// increments are averaged down to the F0 rate, accumulated there and
// linearly interpolated back up (SineGen's interpolate/cumsum/interpolate),
// and the STFT phase is atan(im/re) with a quadrant fix rather than atan2.
//
// f0 is the predicted curve [2F] (Hz); lin and bias are
// decoder.generator.m_source.l_linear. The result is [22, frames] row-major
// with frames = 600F/hop + 1. Arithmetic is float32 in the export's order
// wherever the order changes the result noticeably: the phase is a running
// sum of up to ~10⁵ radians, whose rounding is audible only as slow drift.
func harmonicSpectrum(f0, lin []float32, bias float32) []float32 {
	return stftMagPhase(harmonicSource(f0, lin, bias))
}

// harmonicSource is SourceModuleHnNSF without noise: the merged harmonic
// excitation at the audio rate, 300 samples per F0 value.
func harmonicSource(f0, lin []float32, bias float32) []float32 {
	n2 := len(f0)
	samples := n2 * sourceScale
	// rad(t, h) is the phase increment of harmonic h at sample t, in turns
	// modulo 1, on the nearest-upsampled F0.
	rad := func(t, h int) float32 {
		r := f0[t/sourceScale] * float32(h+1) / SampleRate
		return r - float32(math.Floor(float64(r)))
	}
	// Down to the F0 rate (Resize linear, half_pixel, scale 1/300), then
	// the running phase, in radians at the audio rate.
	down := ortLinear{inLen: samples, scale: float32(1.0 / sourceScale)}
	phase := make([]float32, harmonics*n2) // [h][i]
	for h := range harmonics {
		var cum float32
		row := phase[h*n2 : (h+1)*n2]
		for i := range n2 {
			cum += down.tap(i).at(h == harmonics-1, func(t int) float32 { return rad(t, h) })
			row[i] = cum * 2 * math.Pi * sourceScale
		}
	}
	up := ortLinear{inLen: n2, scale: sourceScale}
	tanhBias := mlasTanh(bias)
	src := make([]float32, samples)
	parallel(samples, 4096, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			if !(f0[t/sourceScale] > voicedThreshold) {
				src[t] = tanhBias // the sines are zeroed where unvoiced
				continue
			}
			tp := up.tap(t)
			var acc float32
			for h := range harmonics {
				row := phase[h*n2 : (h+1)*n2]
				p := tp.at(h == harmonics-1, func(i int) float32 { return row[i] })
				sine := float32(math.Sin(float64(p))) * sineAmp
				acc = fma32(sine, lin[h], acc)
			}
			src[t] = mlasTanh(acc + bias)
		}
	})
	return src
}

// ortLinear is onnxruntime's linear Resize along the last axis of a
// [1, 9, L] tensor (its trilinear path, depth and height unscaled),
// reproduced in float32: half-pixel source coordinates clamped to the
// input, weights |x−x1| and |x−x2|, and the eight-term weighted sum of the
// trilinear kernel, in which the unscaled axes contribute each sample
// twice (and, on the last row, four times). Each output's taps are
// computed where it is computed: a table of them for the 258,000 samples
// of a paragraph took ~4 ms a call on one core before the parallel part
// (H100 host).
type ortLinear struct {
	inLen int
	scale float32
}

// linearTap is where output x of an ortLinear reads its input, and with
// which weights.
type linearTap struct {
	x1, x2   int32
	dx1, dx2 float32
}

// tap returns output x's taps.
func (r ortLinear) tap(x int) linearTap {
	in := (float32(x)+0.5)/r.scale - 0.5
	in = max(0, min(in, float32(r.inLen-1)))
	x1 := min(int32(in), int32(r.inLen-1))
	x2 := min(x1+1, int32(r.inLen-1))
	if x1 == x2 {
		return linearTap{x1, x2, 0.5, 0.5}
	}
	return linearTap{x1, x2, float32(math.Abs(float64(in - float32(x1)))), float32(math.Abs(float64(in - float32(x2))))}
}

// at returns the output of one row, reading the input through get; last
// marks the last row of the unscaled height axis, whose two neighbours
// coincide.
func (c linearTap) at(last bool, get func(int) float32) float32 {
	x1, x2 := get(int(c.x1)), get(int(c.x2))
	if !last {
		a := float32(c.dx2*0.5) * x1
		b := float32(c.dx1*0.5) * x2
		return ((a + b) + a) + b
	}
	a := float32(c.dx2*0.25) * x1
	b := float32(c.dx1*0.25) * x2
	s := a + b
	s += a
	s += b
	s += a
	s += b
	s += a
	s += b
	return s
}

// fma32 is a·b + c with one rounding, as the reference's GEMM kernels
// compute their dot products.
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// stftWindow is the periodic Hann window of n_fft points, as float32.
var stftWindow = sync.OnceValue(func() (w [nFFT]float32) {
	for i := range nFFT {
		w[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/nFFT))
	}
	return w
})

// stftMagPhase is TorchSTFT.transform as exported: reflect-pad by n_fft/2,
// frame with hop, window, one-sided DFT; magnitude and phase stacked as
// [22, frames]. The DFT is onnxruntime's (see bluestein), not an exact
// one: bins that are zero in exact arithmetic (the imaginary part of DC
// and Nyquist, every bin of a constant frame) come out as rounding noise,
// and the sign of that noise decides their phase (±π or 0), which the
// generator then reads. Reproducing the noise reproduces the reference.
func stftMagPhase(x []float32) []float32 {
	win := stftWindow()
	bs := newBluestein(nFFT)
	pad := nFFT / 2
	n := len(x)
	at := func(j int) float32 { // reflect padding (edge excluded)
		j -= pad
		if j < 0 {
			j = -j
		}
		if j >= n {
			j = 2*(n-1) - j
		}
		return x[j]
	}
	frames := n/hop + 1
	out := make([]float32, 2*specBins*frames)
	parallel(frames, 512, func(lo, hi int) {
		var seg [nFFT]float32
		var spec [specBins]complex64
		scratch := bs.scratch()
		for f := lo; f < hi; f++ {
			for i := range nFFT {
				seg[i] = at(f*hop + i)
			}
			bs.transform(spec[:], seg[:], win[:], scratch)
			for k, c := range spec {
				re, im := real(c), imag(c)
				out[k*frames+f] = float32(math.Sqrt(float64(re*re + im*im)))
				out[(specBins+k)*frames+f] = exportPhase(re, im)
			}
		}
	})
	return out
}

// exportPhase is the export's angle: atan(im/re), moved by ±π when re < 0
// (+π when im > 0, else −π). A zero bin, whose angle the export leaves
// undefined (0/0), is given 0.
func exportPhase(re, im float32) float32 {
	if re == 0 && im == 0 {
		return 0
	}
	a := float32(math.Atan(float64(im / re)))
	if re < 0 {
		if im > 0 {
			return a + math.Pi
		}
		return a - math.Pi
	}
	return a
}

// parallel runs fn over [0, n) in chunks of at least grain on all cores.
func parallel(n, grain int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+grain-1)/grain)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+step, n))
	}
	wg.Wait()
}

// mlasTanh is onnxruntime's float tanh (MLAS, FMA3 kernel): Eigen's
// rational approximation on [−9, 9]. The source's unvoiced stretches are
// this constant, and the STFT's rounding noise on them depends on its
// last bit.
func mlasTanh(x float32) float32 {
	const (
		a13, a11, a9, a7 = -2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08
		a5, a3, a1       = 1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03
		b6, b4, b2, b0   = 1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03
	)
	x = max(-9, min(9, x))
	x2 := x * x
	p := fma32(x2, a13, a11)
	p = fma32(p, x2, a9)
	p = fma32(p, x2, a7)
	p = fma32(p, x2, a5)
	p = fma32(p, x2, a3)
	p = fma32(p, x2, a1)
	p *= x
	q := fma32(x2, b6, b4)
	q = fma32(q, x2, b2)
	q = fma32(q, x2, b0)
	return p / q
}
