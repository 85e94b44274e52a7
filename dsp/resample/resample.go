// Package resample converts audio between sample rates with a band-limited
// (Kaiser-windowed sinc) polyphase filter, as a stream: state is carried
// across chunks, so feeding a signal in any chunking gives bit-identical
// output to feeding it whole.
//
// The filter is zero-phase (no delay: output sample n sits at input time
// n·in/out) and low-passes at the Nyquist frequency of the lower of the two
// rates. With the default Quality the passband runs to 90% of that
// Nyquist frequency and the stopband starts at it, designed for 100 dB
// attenuation. Measured by the package tests on stepped sine sweeps
// (24/22.05/44.1/48 kHz → 16 kHz, 8 → 16, 16 → 24/44.1/48, 44.1 → 48):
// passband ripple within ±4e-5 dB (float32 rounding; the test bound is
// ±0.001 dB), passband residual including images below −110 dB, stopband
// attenuation from the output Nyquist frequency up at least 104 dB (test
// bound 95 dB). A 16 → 48 → 16 kHz round trip of noise band-limited to
// 7 kHz keeps an SNR of about 113 dB (acceptance bound 60 dB).
//
// Rational ratios out/in = L/M with L ≤ 1024 (every common pair of audio
// rates) use an exact table of L filter phases; others interpolate
// linearly in a table of 1024 phases, which costs a little speed and
// about 1e-7 in accuracy.
package resample

import (
	"errors"
	"fmt"
	"math"

	"github.com/tensorforge/forge/dsp/window"
)

// MaxRate is the highest sample rate accepted, in Hz.
const MaxRate = 4_000_000

// ErrRate: a sample rate is out of range, or a Quality is invalid.
var ErrRate = errors.New("resample: invalid rate or quality")

// Quality sets the filter. The zero value means the defaults.
type Quality struct {
	// Passband is where the passband ends, as a fraction of the lower
	// rate's Nyquist frequency (0 < Passband < 1; default 0.9). The
	// transition band runs from there to the Nyquist frequency.
	Passband float64
	// Attenuation is the stopband attenuation in dB (default 100).
	Attenuation float64
}

const (
	exactPhaseLimit = 1024 // largest L with an exact phase table
	finePhases      = 1024 // phases of the interpolated table
)

// Resampler converts one stream from In to Out Hz. It is not safe for
// concurrent use.
type Resampler struct {
	in, out int
	l, m    int64 // out/in = l/m in lowest terms
	k       int   // taps of output n cover input indices k_n-k+1 … k_n+k
	taps    int   // 2k
	phases  int   // rows in table: l (exact) or finePhases+1 (interpolated)
	exact   bool
	table   []float32 // phases × taps
	row     []float32 // scratch for an interpolated row

	buf  []float32 // input from absolute index base on
	base int64
	nIn  int64 // input samples received
	nOut int64 // output samples produced
}

// New returns a Resampler from inRate to outRate Hz with the default
// Quality.
func New(inRate, outRate int) (*Resampler, error) {
	return NewQuality(inRate, outRate, Quality{})
}

// NewQuality returns a Resampler with an explicit filter quality.
func NewQuality(inRate, outRate int, q Quality) (*Resampler, error) {
	if inRate <= 0 || outRate <= 0 || inRate > MaxRate || outRate > MaxRate {
		return nil, fmt.Errorf("%w: %d Hz → %d Hz (rates must be 1..%d)", ErrRate, inRate, outRate, MaxRate)
	}
	if q.Passband == 0 {
		q.Passband = 0.9
	}
	if q.Attenuation == 0 {
		q.Attenuation = 100
	}
	if !(q.Passband > 0 && q.Passband < 1) || !(q.Attenuation >= 20 && q.Attenuation <= 200) {
		return nil, fmt.Errorf("%w: passband %v (want 0..1), attenuation %v dB (want 20..200)", ErrRate, q.Passband, q.Attenuation)
	}
	g := gcd(int64(inRate), int64(outRate))
	r := &Resampler{in: inRate, out: outRate, l: int64(outRate) / g, m: int64(inRate) / g}
	if r.l == r.m {
		return r, nil // same rate: a copy
	}

	// Design in units of the lower rate, then scale to input samples.
	ratio := min(1, float64(r.l)/float64(r.m)) // lower rate / input rate
	fc := (1 + q.Passband) / 2                 // cutoff, fraction of the lower Nyquist
	dw := (1 - q.Passband) * math.Pi           // transition width, rad per lower-rate sample
	nLow := (q.Attenuation - 8) / (2.285 * dw) // Kaiser's length estimate
	hw := nLow / 2 / ratio                     // half-width in input samples
	beta := window.KaiserBeta(q.Attenuation)
	i0beta := window.BesselI0(beta)
	h := func(t float64) float64 { // the prototype at t input samples from center
		if math.Abs(t) >= hw {
			return 0
		}
		x := ratio * fc * t
		s := 1.0
		if x != 0 {
			s = math.Sin(math.Pi*x) / (math.Pi * x)
		}
		u := t / hw
		return ratio * fc * s * window.BesselI0(beta*math.Sqrt(1-u*u)) / i0beta
	}
	r.k = int(math.Ceil(hw))
	r.taps = 2 * r.k
	r.exact = r.l <= exactPhaseLimit
	if r.exact {
		r.phases = int(r.l)
	} else {
		r.phases = finePhases + 1
		r.row = make([]float32, r.taps)
	}
	r.table = make([]float32, r.phases*r.taps)
	for p := range r.phases {
		var frac float64 // fractional input position of this phase
		if r.exact {
			frac = float64(p) / float64(r.l)
		} else {
			frac = float64(p) / finePhases
		}
		row := r.table[p*r.taps : (p+1)*r.taps]
		for j := range row {
			row[j] = float32(h(float64(j-r.k+1) - frac))
		}
	}
	r.Reset()
	return r, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// InRate returns the input rate in Hz.
func (r *Resampler) InRate() int { return r.in }

// OutRate returns the output rate in Hz.
func (r *Resampler) OutRate() int { return r.out }

// Taps returns the number of input samples each output sample weighs
// (0 for a same-rate copy).
func (r *Resampler) Taps() int { return r.taps }

// Lookahead returns how many input samples past an output's position must
// arrive before Process emits it: the stream latency, in input samples.
func (r *Resampler) Lookahead() int { return r.k }

// OutputLen returns how many samples a whole signal of n input samples
// becomes: ⌈n·out/in⌉.
func OutputLen(n int64, inRate, outRate int) int64 {
	g := gcd(int64(inRate), int64(outRate))
	l, m := int64(outRate)/g, int64(inRate)/g
	return (n*l + m - 1) / m
}

// Reset forgets the stream, ready for a new one.
func (r *Resampler) Reset() {
	// Input before the stream start reads as zeros.
	r.buf = append(r.buf[:0], make([]float32, max(r.k-1, 0))...)
	r.base = -int64(max(r.k-1, 0))
	r.nIn, r.nOut = 0, 0
}

// Process feeds src and appends every output sample it completes to dst,
// returning the extended slice. Output lags input by Lookahead() samples
// until Flush.
func (r *Resampler) Process(dst, src []float32) []float32 {
	if r.l == r.m {
		return append(dst, src...)
	}
	r.buf = append(r.buf, src...)
	r.nIn += int64(len(src))
	return r.emit(dst, false)
}

// Flush ends the stream: it treats the input after the last sample as
// zeros, appends the remaining output (so that the stream as a whole
// yields OutputLen samples) to dst, and resets the Resampler.
func (r *Resampler) Flush(dst []float32) []float32 {
	if r.l != r.m {
		dst = r.emit(dst, true)
	}
	r.Reset()
	return dst
}

// emit computes outputs while their input window is available (or, when
// final, until the stream's output length is reached).
func (r *Resampler) emit(dst []float32, final bool) []float32 {
	total := (r.nIn*r.l + r.m - 1) / r.m // ⌈nIn·l/m⌉
	if final {
		r.buf = append(r.buf, make([]float32, r.k)...)
	}
	for ; r.nOut < total; r.nOut++ {
		pos := r.nOut * r.m
		kn, phase := pos/r.l, pos%r.l
		if !final && kn+int64(r.k) >= r.nIn {
			break
		}
		start := int(kn - int64(r.k) + 1 - r.base)
		x := r.buf[start : start+r.taps]
		dst = append(dst, dot(r.coeffs(phase), x))
	}
	// Drop input no later output needs.
	next := (r.nOut*r.m)/r.l - int64(r.k) + 1
	if drop := int(next - r.base); drop > 0 && !final {
		drop = min(drop, len(r.buf))
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.base += int64(drop)
	}
	return dst
}

// coeffs returns the filter row for an output whose position lies
// phase/l of an input sample past its base index.
func (r *Resampler) coeffs(phase int64) []float32 {
	if r.exact {
		return r.table[int(phase)*r.taps : int(phase+1)*r.taps]
	}
	// Interpolate between the two fine phases around phase/l.
	num := phase * finePhases
	p := int(num / r.l)
	f := float32(float64(num%r.l) / float64(r.l))
	a := r.table[p*r.taps : (p+1)*r.taps]
	b := r.table[(p+1)*r.taps : (p+2)*r.taps]
	for j := range r.row {
		r.row[j] = a[j] + f*(b[j]-a[j])
	}
	return r.row
}

// dot is Σ h[j]·x[j] with four partial sums (a fixed order, so the result
// does not depend on how the stream was chunked).
func dot(h, x []float32) float32 {
	x = x[:len(h)]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= len(h); j += 4 {
		s0 += h[j] * x[j]
		s1 += h[j+1] * x[j+1]
		s2 += h[j+2] * x[j+2]
		s3 += h[j+3] * x[j+3]
	}
	for ; j < len(h); j++ {
		s0 += h[j] * x[j]
	}
	return (s0 + s1) + (s2 + s3)
}

// Resample converts a whole signal from inRate to outRate Hz with the
// default Quality, returning OutputLen(len(x)) samples.
func Resample(x []float32, inRate, outRate int) ([]float32, error) {
	r, err := New(inRate, outRate)
	if err != nil {
		return nil, err
	}
	out := make([]float32, 0, OutputLen(int64(len(x)), inRate, outRate))
	out = r.Process(out, x)
	return r.Flush(out), nil
}
