// Package mel computes Whisper's log-mel spectrogram exactly as OpenAI
// Whisper and transformers' WhisperFeatureExtractor do:
//
//  1. zero-pad or trim the 16 kHz waveform to 30 s (480000 samples);
//  2. reflect-pad 200 samples on both sides (torch.stft center=True);
//  3. frame with a periodic Hann window of 400, hop 160, and keep the first
//     3000 frames (the 3001st is dropped);
//  4. power spectrum |rfft|², bins 0..200;
//  5. Slaney mel filters (80 or 128 bands, 0–8000 Hz);
//  6. log10(max(mel, 1e-10));
//  7. floor at (global max − 8), then (x + 4) / 4.
//
// Frames run in parallel across goroutines with a float32 FFT and the
// filters stored as sparse bin ranges. Callers that do not need the full
// 30-s window (short clips, models run with a reduced audio context) ask
// for fewer frames and pay only for those.
//
// Long-form transcription (openai-whisper's transcribe) computes the
// features of the whole recording plus 30 s of zeros once, so the max−8
// floor is global, and then cuts 3000-frame windows at each seek: that is
// Compute with nFrames = LongFormFrames(len(audio)) followed by Window.
package mel

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tensorforge/forge/dsp/fft"
	"github.com/tensorforge/forge/dsp/window"
)

// Whisper's fixed front-end parameters.
const (
	SampleRate   = 16000  // Hz
	NFFT         = 400    // 25 ms
	Hop          = 160    // 10 ms
	ChunkSamples = 480000 // 30 s
	ChunkFrames  = 3000   // frames in a 30-s window
)

// MaxFrames bounds nFrames (about 4.6 hours of audio).
const MaxFrames = 1 << 24

// Errors returned by Compute.
var (
	// ErrFrames: nFrames is not in 1..MaxFrames.
	ErrFrames = errors.New("mel: frame count out of range")
	// ErrNotFinite: the audio holds NaN or ±Inf.
	ErrNotFinite = errors.New("mel: audio sample is NaN or infinite")
)

// band is one mel filter as the non-zero run of its weights.
type band struct {
	lo int       // first FFT bin with a non-zero weight
	w  []float32 // weights for bins lo, lo+1, ...
}

// Extractor computes log-mel features with one filter bank. It keeps its
// per-goroutine FFT plans and buffers between calls; calls must not
// overlap (use one Extractor per goroutine, or guard it).
type Extractor struct {
	nMels   int
	filters []float32 // nMels × (NFFT/2+1), the dense bank
	bands   []band
	win     []float32
	workers []*worker
	padded  []float32
	last    int // index of padded's last non-zero sample (see lastSound)
}

// worker is one goroutine's scratch.
type worker struct {
	plan  *fft.RealPlan
	frame []float32
	spec  []complex64
	power []float32
	max   float32
}

// NewExtractor returns an Extractor for nMels mel bands: 80 for Whisper
// tiny…large-v2, 128 for large-v3. Frames are spread over GOMAXPROCS
// goroutines.
func NewExtractor(nMels int) (*Extractor, error) {
	if nMels < 1 || nMels > 1024 {
		return nil, fmt.Errorf("mel: %d mel bands (want 1..1024)", nMels)
	}
	e := &Extractor{
		nMels:   nMels,
		filters: SlaneyFilters(SampleRate, NFFT, nMels, 0, SampleRate/2),
		win:     window.Hann(NFFT, true),
	}
	bins := NFFT/2 + 1
	for m := range nMels {
		row := e.filters[m*bins : (m+1)*bins]
		lo, hi := 0, 0
		for k, v := range row {
			if v != 0 {
				if hi == 0 {
					lo = k
				}
				hi = k + 1
			}
		}
		e.bands = append(e.bands, band{lo: lo, w: row[lo:hi]})
	}
	plan, err := fft.NewRealPlan(NFFT)
	if err != nil {
		return nil, err
	}
	n := max(1, runtime.GOMAXPROCS(0))
	for i := range n {
		p := plan
		if i > 0 {
			p = plan.Clone()
		}
		e.workers = append(e.workers, &worker{
			plan: p, frame: make([]float32, NFFT), spec: make([]complex64, bins), power: make([]float32, bins),
		})
	}
	return e, nil
}

// NMels returns the number of mel bands.
func (e *Extractor) NMels() int { return e.nMels }

// Filters returns the dense filter bank, nMels × 201 row-major (shared;
// do not modify).
func (e *Extractor) Filters() []float32 { return e.filters }

// FramesFor returns the number of frames transformers produces for n
// samples without 30-s padding (n / Hop).
func FramesFor(n int) int { return n / Hop }

// Compute writes the log-mel features of audio (16 kHz mono) into dst,
// reusing its storage, as nMels rows of nFrames values (mel-major: the
// [n_mels, n_frames] layout of Whisper's input_features). nFrames =
// ChunkFrames gives Whisper's 30-s features exactly; any nFrames processes
// audio zero-padded or trimmed to nFrames·Hop samples, so the global
// maximum in step 7 is taken over those frames only.
func (e *Extractor) Compute(dst, audio []float32, nFrames int) ([]float32, error) {
	if nFrames < 1 || nFrames > MaxFrames {
		return dst, fmt.Errorf("%w: %d (want 1..%d)", ErrFrames, nFrames, MaxFrames)
	}
	for i, v := range audio {
		if v-v != 0 { // NaN or ±Inf
			return dst, fmt.Errorf("%w: sample %d is %v", ErrNotFinite, i, v)
		}
	}
	n := nFrames * Hop
	body := audio[:min(len(audio), n)]
	e.padded = reflectPad(e.padded, body, n, NFFT/2)
	e.last = lastSound(body, n, NFFT/2)

	need := e.nMels * nFrames
	if cap(dst) < need {
		dst = make([]float32, need)
	}
	dst = dst[:need]

	// Frames go out in blocks through a counter, not as one range per
	// goroutine: a recording is followed by its silence (NewAudio adds
	// 30 s of it), whose frames cost almost nothing, so equal ranges left
	// all the speech to the first goroutines.
	var next atomic.Int64
	e.parallel(func(w *worker) {
		w.max = float32(math.Inf(-1))
		for {
			lo := int(next.Add(frameBlock)) - frameBlock
			if lo >= nFrames {
				return
			}
			e.frames(w, dst, nFrames, lo, min(lo+frameBlock, nFrames))
		}
	})
	top := float32(math.Inf(-1))
	for _, w := range e.workers {
		top = max(top, w.max)
	}
	floor := top - 8
	var band atomic.Int64
	e.parallel(func(*worker) {
		for {
			m := int(band.Add(1)) - 1
			if m >= e.nMels {
				return
			}
			row := dst[m*nFrames : (m+1)*nFrames]
			for i, v := range row {
				row[i] = (max(v, floor) + 4) / 4
			}
		}
	})
	return dst, nil
}

// frameBlock is the number of frames a goroutine takes at a time.
const frameBlock = 32

// parallel runs body once on each worker's goroutine (the caller's for the
// first) and returns when all have returned.
func (e *Extractor) parallel(body func(w *worker)) {
	var wg sync.WaitGroup
	for _, w := range e.workers[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(w)
		}()
	}
	body(e.workers[0])
	wg.Wait()
}

// LongFormFrames returns the frame count of openai-whisper's
// log_mel_spectrogram(audio, padding=480000) for n samples: the whole
// recording followed by 30 s of zeros.
func LongFormFrames(n int) int { return (n + ChunkSamples) / Hop }

// Window copies frames [start, start+width) of features laid out as nMels
// rows of nFrames into dst (nMels rows of width), zero-filling frames past
// the end as openai-whisper's pad_or_trim does, and returns dst.
func Window(dst, feats []float32, nMels, nFrames, start, width int) []float32 {
	if cap(dst) < nMels*width {
		dst = make([]float32, nMels*width)
	}
	dst = dst[:nMels*width]
	for m := range nMels {
		row := dst[m*width : (m+1)*width]
		n := 0
		if start < nFrames {
			n = copy(row, feats[m*nFrames+start:(m+1)*nFrames])
		}
		clear(row[n:])
	}
	return dst
}

// LogMel computes 30-s Whisper features of audio with nMels bands. For
// repeated calls keep an Extractor instead.
func LogMel(audio []float32, nMels int) ([]float32, error) {
	e, err := NewExtractor(nMels)
	if err != nil {
		return nil, err
	}
	return e.Compute(nil, audio, ChunkFrames)
}

// frames computes log10 mel energies of frames [lo, hi) into dst.
func (e *Extractor) frames(w *worker, dst []float32, nFrames, lo, hi int) {
	const floorLog = -10 // log10(1e-10), the clamp
	for t := lo; t < hi; t++ {
		if t*Hop > e.last { // the silence after the recording
			for m := range e.bands {
				dst[m*nFrames+t] = floorLog
			}
			w.max = max(w.max, floorLog)
			continue
		}
		seg := e.padded[t*Hop : t*Hop+NFFT]
		silent := true
		for i, v := range seg {
			w.frame[i] = v * e.win[i]
			if v != 0 {
				silent = false
			}
		}
		if silent {
			// An all-zero frame has zero power everywhere: every band
			// clamps to 1e-10. Skipping its FFT is exact.
			for m := range e.bands {
				dst[m*nFrames+t] = floorLog
			}
			w.max = max(w.max, floorLog)
			continue
		}
		w.plan.Forward(w.spec, w.frame)
		for k, c := range w.spec {
			w.power[k] = real(c)*real(c) + imag(c)*imag(c)
		}
		for m, b := range e.bands {
			p := w.power[b.lo : b.lo+len(b.w)]
			var acc float32
			for k, v := range b.w {
				acc += v * p[k]
			}
			l := log10f(max(acc, 1e-10))
			dst[m*nFrames+t] = l
			w.max = max(w.max, l)
		}
	}
}

// lastSound returns the index in reflectPad(x, n, p) of its last non-zero
// sample (-1 if none), or the last index when the end's reflection may
// reach into x's sound: frames that start after it are silent.
func lastSound(x []float32, n, p int) int {
	last := len(x) - 1
	for last >= 0 && x[last] == 0 {
		last--
	}
	switch {
	case last < 0:
		return -1
	case last >= n-1-p: // within reach of the end's reflection
		return n + 2*p - 1
	}
	return p + last
}

// reflectPad returns x zero-padded (or cut) to n samples, then extended by
// p samples on each side by reflection without repeating the edge, as
// numpy.pad(mode="reflect") does (which also handles p ≥ n by reflecting
// back and forth).
func reflectPad(dst, x []float32, n, p int) []float32 {
	total := n + 2*p
	if cap(dst) < total {
		dst = make([]float32, total)
	}
	dst = dst[:total]
	body := dst[p : p+n]
	copy(body, x)
	clear(body[len(x):])
	at := func(i int) float32 {
		if n == 1 {
			return body[0]
		}
		period := 2 * (n - 1)
		i %= period
		if i < 0 {
			i += period
		}
		if i >= n {
			i = period - i
		}
		return body[i]
	}
	for i := range p {
		dst[i] = at(i - p)
		dst[p+n+i] = at(n + i)
	}
	return dst
}
