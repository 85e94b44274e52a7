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
	n2 := len(f0)
	samples := n2 * sourceScale // 300 samples per F0 value
	// Phase increments per F0 value (each value covers 300 samples, so the
	// down-sampled average is the value itself), accumulated, in radians
	// at the audio rate.
	phase := make([]float32, n2*harmonics)
	var cum [harmonics]float32
	for i, f := range f0 {
		for h := range harmonics {
			r := f * float32(h+1) / SampleRate
			r -= float32(math.Floor(float64(r)))
			cum[h] += r
			phase[i*harmonics+h] = cum[h] * 2 * math.Pi * sourceScale
		}
	}
	src := make([]float32, samples)
	parallel(samples, 4096, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			i := t / sourceScale
			if !(f0[i] > voicedThreshold) {
				src[t] = float32(math.Tanh(float64(bias)))
				continue
			}
			// Linear interpolation, half-pixel centres, clamped at the ends.
			x := (float32(t)+0.5)/sourceScale - 0.5
			x = min(max(x, 0), float32(n2-1))
			i0 := int(x)
			i1 := min(i0+1, n2-1)
			w := x - float32(i0)
			var acc float32
			for h := range harmonics {
				p := phase[i0*harmonics+h]*(1-w) + phase[i1*harmonics+h]*w
				acc += float32(math.Sin(float64(p))) * sineAmp * lin[h]
			}
			src[t] = float32(math.Tanh(float64(acc + bias)))
		}
	})
	return stftMagPhase(src)
}

// stftWindow is the periodic Hann window of n_fft points and dft the
// one-sided DFT basis, both as float32.
var stftTables = sync.OnceValue(func() (t struct {
	window [nFFT]float32
	cos    [specBins][nFFT]float32
	sin    [specBins][nFFT]float32
}) {
	for i := range nFFT {
		t.window[i] = float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/nFFT))
	}
	for k := range specBins {
		for i := range nFFT {
			a := 2 * math.Pi * float64(k*i%nFFT) / nFFT
			t.cos[k][i] = float32(math.Cos(a))
			t.sin[k][i] = float32(math.Sin(a))
		}
	}
	return t
})

// stftMagPhase is TorchSTFT.transform as exported: reflect-pad by n_fft/2,
// frame with hop, window, one-sided DFT; magnitude and phase stacked as
// [22, frames].
func stftMagPhase(x []float32) []float32 {
	tb := stftTables()
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
	parallel(frames, 1024, func(lo, hi int) {
		var seg [nFFT]float32
		for f := lo; f < hi; f++ {
			for i := range nFFT {
				seg[i] = at(f*hop+i) * tb.window[i]
			}
			for k := range specBins {
				var re, im float32
				for i, v := range seg {
					re += v * tb.cos[k][i]
					im -= v * tb.sin[k][i]
				}
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
