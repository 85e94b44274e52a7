package mel

import "math"

// Slaney mel scale (librosa htk=False, the scale of Whisper's filters):
// linear below 1 kHz at 200/3 Hz per mel, logarithmic above.
const (
	fSp       = 200.0 / 3
	minLogHz  = 1000.0
	minLogMel = minLogHz / fSp
)

var logStep = math.Log(6.4) / 27

// HzToMel converts a frequency to the Slaney mel scale.
func HzToMel(hz float64) float64 {
	if hz >= minLogHz {
		return minLogMel + math.Log(hz/minLogHz)/logStep
	}
	return hz / fSp
}

// MelToHz converts a Slaney mel value back to Hz.
func MelToHz(mel float64) float64 {
	if mel >= minLogMel {
		return minLogHz * math.Exp(logStep*(mel-minLogMel))
	}
	return fSp * mel
}

// SlaneyFilters returns the triangular mel filter bank of librosa.filters.mel
// (htk=False, norm="slaney"), which is what Whisper's mel_filters.npz and
// transformers' WhisperFeatureExtractor hold: nMels rows of nFFT/2+1 FFT-bin
// weights, row-major. Computed in float64 like librosa, then rounded to
// float32.
func SlaneyFilters(sampleRate, nFFT, nMels int, fmin, fmax float64) []float32 {
	bins := nFFT/2 + 1
	// mel_frequencies: nMels+2 points evenly spaced in mel, as np.linspace.
	lo, hi := HzToMel(fmin), HzToMel(fmax)
	pts := make([]float64, nMels+2)
	step := (hi - lo) / float64(nMels+1)
	for i := range pts {
		pts[i] = MelToHz(lo + float64(i)*step)
	}
	pts[nMels+1] = MelToHz(hi)

	w := make([]float32, nMels*bins)
	for m := range nMels {
		d0, d1 := pts[m+1]-pts[m], pts[m+2]-pts[m+1]
		enorm := 2 / (pts[m+2] - pts[m])
		for k := range bins {
			f := float64(k) * float64(sampleRate) / float64(nFFT)
			lower := (f - pts[m]) / d0
			upper := (pts[m+2] - f) / d1
			w[m*bins+k] = float32(max(0, min(lower, upper)) * enorm)
		}
	}
	return w
}
