// Package stft computes the short-time Fourier transform and its inverse
// with the semantics of torch.stft and torch.istft (onesided, real input):
// n_fft, hop_length, win_length, window, center with reflect (or constant,
// replicate) padding, normalized.
//
// Spectrograms are held as two float32 planes, real and imaginary (or
// magnitude and phase, see ToPolar/FromPolar), in either layout: BinsMajor
// is torch's [freq, time] and the channel-first layout of a conv1d output
// (Kokoro's generator); FramesMajor is [time, freq]. An STFT value keeps
// its scratch buffers between calls, so steady-state calls allocate
// nothing; it must not be used by two goroutines at once.
package stft

import (
	"errors"
	"fmt"
	"math"

	"github.com/tensorforge/forge/dsp/fft"
)

// PadMode is how center padding extends the signal (torch pad_mode).
type PadMode int

const (
	// Reflect mirrors the signal without repeating the edge sample
	// (torch's default): x[2], x[1] | x[0], x[1], ...
	Reflect PadMode = iota
	// Constant pads with zeros.
	Constant
	// Replicate repeats the edge sample.
	Replicate
)

// Layout is the memory order of a spectrogram plane.
type Layout int

const (
	// BinsMajor stores plane[bin*frames + frame]: torch's [n_fft/2+1, frames].
	BinsMajor Layout = iota
	// FramesMajor stores plane[frame*bins + bin].
	FramesMajor
)

// Errors returned for inputs the transform cannot take.
var (
	// ErrConfig: the Config is inconsistent.
	ErrConfig = errors.New("stft: invalid config")
	// ErrTooShort: the signal is too short for the frame size or for
	// reflect padding (torch raises the same).
	ErrTooShort = errors.New("stft: signal too short")
	// ErrShape: the planes do not hold a whole number of frames of
	// n_fft/2+1 bins, or disagree in length.
	ErrShape = errors.New("stft: spectrogram shape mismatch")
	// ErrNOLA: the window overlap-add is (near) zero somewhere in the
	// output, so the inverse cannot divide by it (torch's "window overlap
	// add min" check, threshold 1e-11).
	ErrNOLA = errors.New("stft: window overlap-add is zero (NOLA condition violated)")
)

// Config mirrors the arguments of torch.stft / torch.istft.
type Config struct {
	NFFT      int       // n_fft: FFT size, ≥ 1
	Hop       int       // hop_length; 0 means NFFT/4 (torch's default)
	WinLength int       // win_length; 0 means NFFT
	Window    []float32 // len WinLength; nil means all ones (torch's default)
	// Center pads NFFT/2 samples on both sides before framing (torch's
	// default is true) and trims them again in the inverse.
	Center  bool
	PadMode PadMode // padding for Center
	// Normalized scales the forward transform by 1/√NFFT and the inverse
	// by √NFFT (torch normalized=True).
	Normalized bool
}

// STFT is a configured transform with its FFT plan and scratch buffers.
type STFT struct {
	nfft, hop, bins int
	center          bool
	pad             PadMode
	scale           float32   // forward scale (1 or 1/√nfft)
	win             []float32 // the window zero-padded to nfft, centered
	plan            *fft.RealPlan
	frame           []float32
	spec            []complex64
	padded          []float32
	env             []float32
	re, im          []float32 // InversePolar's conversion buffers
}

// New validates cfg and precomputes the plan and window.
func New(cfg Config) (*STFT, error) {
	if cfg.NFFT < 1 {
		return nil, fmt.Errorf("%w: n_fft %d", ErrConfig, cfg.NFFT)
	}
	hop := cfg.Hop
	if hop == 0 {
		hop = max(cfg.NFFT/4, 1)
	}
	winLen := cfg.WinLength
	if winLen == 0 {
		winLen = cfg.NFFT
	}
	switch {
	case hop < 1:
		return nil, fmt.Errorf("%w: hop %d", ErrConfig, hop)
	case winLen < 1 || winLen > cfg.NFFT:
		return nil, fmt.Errorf("%w: win_length %d with n_fft %d (want 1..n_fft)", ErrConfig, winLen, cfg.NFFT)
	case cfg.Window != nil && len(cfg.Window) != winLen:
		return nil, fmt.Errorf("%w: window of %d points, win_length %d", ErrConfig, len(cfg.Window), winLen)
	case cfg.PadMode < Reflect || cfg.PadMode > Replicate:
		return nil, fmt.Errorf("%w: pad mode %d", ErrConfig, cfg.PadMode)
	}
	plan, err := fft.NewRealPlan(cfg.NFFT)
	if err != nil {
		return nil, err
	}
	s := &STFT{
		nfft: cfg.NFFT, hop: hop, bins: cfg.NFFT/2 + 1,
		center: cfg.Center, pad: cfg.PadMode, scale: 1,
		win:   make([]float32, cfg.NFFT),
		plan:  plan,
		frame: make([]float32, cfg.NFFT),
		spec:  make([]complex64, cfg.NFFT/2+1),
	}
	if cfg.Normalized {
		s.scale = float32(1 / math.Sqrt(float64(cfg.NFFT)))
	}
	// torch centers a shorter window inside the n_fft frame.
	left := (cfg.NFFT - winLen) / 2
	for i := range winLen {
		w := float32(1)
		if cfg.Window != nil {
			w = cfg.Window[i]
		}
		s.win[left+i] = w
	}
	return s, nil
}

// Bins returns NFFT/2+1, the number of frequency bins.
func (s *STFT) Bins() int { return s.bins }

// Hop returns the hop length in samples.
func (s *STFT) Hop() int { return s.hop }

// NFFT returns the FFT size.
func (s *STFT) NFFT() int { return s.nfft }

// Frames returns the number of frames Forward produces for n samples
// (0 when n is too short).
func (s *STFT) Frames(n int) int {
	if s.center {
		n += 2 * (s.nfft / 2)
	}
	if n < s.nfft {
		return 0
	}
	return 1 + (n-s.nfft)/s.hop
}

// OutputLen returns the number of samples Inverse produces from frames
// frames when no length is requested.
func (s *STFT) OutputLen(frames int) int {
	if frames <= 0 {
		return 0
	}
	n := s.nfft + s.hop*(frames-1)
	if s.center {
		n -= 2 * (s.nfft / 2)
	}
	return max(n, 0)
}

// Forward computes the STFT of x into the planes re and im (each of
// length Bins()·Frames(len(x)), in layout), reusing their storage when it
// is large enough. It returns the planes and the frame count.
func (s *STFT) Forward(re, im []float32, layout Layout, x []float32) ([]float32, []float32, int, error) {
	sig := x
	if s.center {
		p := s.nfft / 2
		if s.pad == Reflect && p >= len(x) && p > 0 {
			return re, im, 0, fmt.Errorf("%w: reflect padding of %d needs more than %d samples", ErrTooShort, p, len(x))
		}
		if len(x) == 0 && p > 0 {
			return re, im, 0, fmt.Errorf("%w: empty signal", ErrTooShort)
		}
		s.padded = padSignal(s.padded[:0], x, p, s.pad)
		sig = s.padded
	}
	frames := s.Frames(len(x))
	if frames == 0 {
		return re, im, 0, fmt.Errorf("%w: %d samples for n_fft %d", ErrTooShort, len(x), s.nfft)
	}
	n := frames * s.bins
	re, im = grow(re, n), grow(im, n)
	for t := range frames {
		seg := sig[t*s.hop : t*s.hop+s.nfft]
		for i, v := range seg {
			s.frame[i] = v * s.win[i]
		}
		s.plan.Forward(s.spec, s.frame)
		for k, c := range s.spec {
			i := index(layout, k, t, s.bins, frames)
			re[i], im[i] = real(c)*s.scale, imag(c)*s.scale
		}
	}
	return re, im, frames, nil
}

// Inverse computes torch.istft of the spectrogram planes re and im (layout
// as given; their length fixes the frame count) into dst, reusing its
// storage. length < 0 means the natural length OutputLen(frames); a
// length ≥ 0 trims or zero-pads to exactly that many samples, as torch's
// length argument. As in torch.irfft, the imaginary parts of the DC and
// Nyquist bins are ignored.
func (s *STFT) Inverse(dst, re, im []float32, layout Layout, length int) ([]float32, error) {
	if len(re) != len(im) || len(re)%s.bins != 0 {
		return dst, fmt.Errorf("%w: planes of %d and %d values for %d bins", ErrShape, len(re), len(im), s.bins)
	}
	frames := len(re) / s.bins
	if frames == 0 {
		return dst, fmt.Errorf("%w: no frames", ErrShape)
	}
	full := s.nfft + s.hop*(frames-1) // torch's expected_output_signal_len
	start := 0
	if s.center {
		start = s.nfft / 2
	}
	end := full
	if s.center {
		end = full - s.nfft/2
	}
	if length >= 0 {
		end = start + length
	}
	if end < start {
		return dst, fmt.Errorf("%w: %d frames give no samples after trimming the center padding", ErrTooShort, frames)
	}
	// Overlap-add the windowed frames and the squared window into
	// buffers covering [start, min(end, full)).
	stop := min(end, full)
	n := stop - start
	dst = grow(dst, end-start)
	out := dst[:n]
	clear(out)
	s.env = grow(s.env, n)
	env := s.env
	clear(env)
	inv := 1 / s.scale
	for t := range frames {
		for k := range s.spec {
			i := index(layout, k, t, s.bins, frames)
			s.spec[k] = complex(re[i]*inv, im[i]*inv)
		}
		s.plan.Inverse(s.frame, s.spec)
		off := t*s.hop - start
		lo, hi := max(0, -off), min(s.nfft, n-off)
		for j := lo; j < hi; j++ {
			w := s.win[j]
			out[off+j] += s.frame[j] * w
			env[off+j] += w * w
		}
	}
	for i, e := range env {
		if float32(math.Abs(float64(e))) < 1e-11 {
			return dst, fmt.Errorf("%w: at output sample %d", ErrNOLA, i)
		}
		out[i] /= e
	}
	clear(dst[n:]) // torch zero-pads a requested length beyond the frames
	return dst, nil
}

// InversePolar is Inverse of a spectrogram given as magnitude and phase
// planes (Kokoro's generator output: magnitude·exp(i·phase)), converting
// into internal buffers that are reused from call to call.
func (s *STFT) InversePolar(dst, mag, phase []float32, layout Layout, length int) ([]float32, error) {
	if len(mag) != len(phase) {
		return dst, fmt.Errorf("%w: magnitude has %d values, phase %d", ErrShape, len(mag), len(phase))
	}
	s.re, s.im = grow(s.re, len(mag)), grow(s.im, len(mag))
	FromPolar(s.re, s.im, mag, phase)
	return s.Inverse(dst, s.re, s.im, layout, length)
}

// ToPolar converts real/imaginary planes to magnitude and phase
// (torch.abs, torch.angle = atan2(im, re)). mag and phase may alias re and
// im respectively.
func ToPolar(mag, phase, re, im []float32) {
	for i := range re {
		r, q := float64(re[i]), float64(im[i])
		mag[i], phase[i] = float32(math.Hypot(r, q)), float32(math.Atan2(q, r))
	}
}

// FromPolar converts magnitude and phase planes to real/imaginary ones:
// re = mag·cos(phase), im = mag·sin(phase), as Kokoro's
// magnitude·exp(i·phase). re and im may alias mag and phase respectively.
func FromPolar(re, im, mag, phase []float32) {
	for i := range mag {
		sn, cs := math.Sincos(float64(phase[i]))
		m := float64(mag[i])
		re[i], im[i] = float32(m*cs), float32(m*sn)
	}
}

func index(layout Layout, bin, frame, bins, frames int) int {
	if layout == FramesMajor {
		return frame*bins + bin
	}
	return bin*frames + frame
}

// grow returns b resized to n, reusing its storage when possible.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// padSignal appends x with p samples of padding on both sides to dst.
func padSignal(dst, x []float32, p int, mode PadMode) []float32 {
	n := len(x)
	at := func(i int) float32 { // x extended beyond [0, n)
		switch mode {
		case Reflect:
			// Reflection about the edge samples; p < n is checked by the caller.
			if i < 0 {
				i = -i
			} else if i >= n {
				i = 2*(n-1) - i
			}
			return x[i]
		case Replicate:
			return x[min(max(i, 0), n-1)]
		}
		return 0
	}
	for i := -p; i < 0; i++ {
		dst = append(dst, at(i))
	}
	dst = append(dst, x...)
	for i := n; i < n+p; i++ {
		dst = append(dst, at(i))
	}
	return dst
}
