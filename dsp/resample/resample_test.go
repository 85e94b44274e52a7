package resample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var pairs = [][2]int{
	{24000, 16000}, {44100, 16000}, {48000, 16000}, {22050, 16000}, {8000, 16000},
	{16000, 48000}, {16000, 24000}, {16000, 44100}, {44100, 48000},
}

func tone(n, rate int, f, amp float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(amp * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
	}
	return x
}

// fit returns the amplitude of the sinusoid at f Hz in y (least squares
// over the middle of y, away from the start-up edges) and the RMS of what
// is left after removing it.
func fit(y []float32, rate int, f float64) (amp, residual float64) {
	lo, hi := len(y)/8, len(y)-len(y)/8
	var ss, sc, cc, ys, yc float64
	for i := lo; i < hi; i++ {
		s, c := math.Sincos(2 * math.Pi * f * float64(i) / float64(rate))
		ss += s * s
		sc += s * c
		cc += c * c
		ys += float64(y[i]) * s
		yc += float64(y[i]) * c
	}
	det := ss*cc - sc*sc
	a := (ys*cc - yc*sc) / det
	b := (yc*ss - ys*sc) / det
	var res float64
	for i := lo; i < hi; i++ {
		s, c := math.Sincos(2 * math.Pi * f * float64(i) / float64(rate))
		d := float64(y[i]) - a*s - b*c
		res += d * d
	}
	return math.Hypot(a, b), math.Sqrt(res / float64(hi-lo))
}

// TestSweepPassbandAndStopband is a stepped sine sweep through each
// conversion: tones in the passband must come out at unit gain (the ripple
// is the worst deviation, in dB) and clean (residual); tones between the
// output Nyquist frequency and the input Nyquist frequency must vanish
// (the stopband attenuation).
func TestSweepPassbandAndStopband(t *testing.T) {
	for _, p := range pairs {
		in, out := p[0], p[1]
		low := float64(min(in, out)) / 2
		n := in / 4 // a quarter second
		ripple, worstClean := 0.0, math.Inf(-1)
		for f := 40.0; f <= 0.9*low; f += 0.9 * low / 15 {
			y, err := Resample(tone(n, in, f, 0.5), in, out)
			if err != nil {
				t.Fatal(err)
			}
			amp, res := fit(y, out, f)
			ripple = max(ripple, math.Abs(20*math.Log10(amp/0.5)))
			worstClean = max(worstClean, 20*math.Log10(res/(0.5/math.Sqrt2)))
		}
		stop := math.Inf(1)
		if in > out {
			for f := low * 1.0; f < float64(in)/2; f += (float64(in)/2 - low) / 9 {
				y, _ := Resample(tone(n, in, f, 0.5), in, out)
				var rms float64
				for _, v := range y[len(y)/8 : len(y)-len(y)/8] {
					rms += float64(v) * float64(v)
				}
				rms = math.Sqrt(rms / float64(len(y)-len(y)/4))
				stop = min(stop, -20*math.Log10(rms/(0.5/math.Sqrt2)+1e-30))
			}
		}
		if in > out {
			t.Logf("%5d → %5d Hz: passband ripple ±%.2g dB, worst residual %.1f dB, stopband attenuation %.1f dB", in, out, ripple, worstClean, stop)
		} else {
			t.Logf("%5d → %5d Hz: passband ripple ±%.2g dB, worst residual incl. images %.1f dB", in, out, ripple, worstClean)
		}
		if ripple > 0.001 {
			t.Errorf("%d → %d: passband ripple %.3g dB > 0.001 dB", in, out, ripple)
		}
		if worstClean > -90 {
			t.Errorf("%d → %d: passband residual %.1f dB > -90 dB", in, out, worstClean)
		}
		if stop < 95 {
			t.Errorf("%d → %d: stopband attenuation %.1f dB < 95 dB", in, out, stop)
		}
	}
}

// bandLimitedNoise sums random sinusoids below fmax Hz.
func bandLimitedNoise(rng *rand.Rand, n, rate int, fmax float64) []float32 {
	x := make([]float64, n)
	for range 200 {
		f := rng.Float64() * fmax
		ph := rng.Float64() * 2 * math.Pi
		a := rng.NormFloat64()
		for i := range x {
			x[i] += a * math.Sin(2*math.Pi*f*float64(i)/float64(rate)+ph)
		}
	}
	var peak float64
	for _, v := range x {
		peak = max(peak, math.Abs(v))
	}
	out := make([]float32, n)
	for i, v := range x {
		out[i] = float32(0.9 * v / peak)
	}
	return out
}

// TestRoundTripSNR is the acceptance check: 16 → 48 → 16 kHz on noise
// band-limited to 7 kHz keeps an SNR of at least 60 dB.
func TestRoundTripSNR(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := bandLimitedNoise(rng, 16000, 16000, 7000)
	up, err := Resample(x, 16000, 48000)
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 48000 {
		t.Fatalf("upsampled to %d samples, want 48000", len(up))
	}
	back, err := Resample(up, 48000, 16000)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(x) {
		t.Fatalf("round trip gave %d samples, want %d", len(back), len(x))
	}
	// The signal starts and stops abruptly, which is not band-limited;
	// judge the part one filter length away from the edges.
	var sig, noise float64
	for i := 400; i < len(x)-400; i++ {
		sig += float64(x[i]) * float64(x[i])
		d := float64(back[i] - x[i])
		noise += d * d
	}
	snr := 10 * math.Log10(sig/noise)
	t.Logf("16k → 48k → 16k SNR on 7-kHz band-limited noise: %.1f dB", snr)
	if snr < 60 {
		t.Errorf("SNR %.1f dB < 60 dB", snr)
	}
}

// TestChunkedEqualsWhole checks the carried state: any chunking gives
// bit-identical output to one whole call.
func TestChunkedEqualsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 20011)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.3)
	}
	for _, p := range append(pairs, [2]int{16000, 16000}, [2]int{44100, 16001}) {
		whole, err := Resample(x, p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(whole)) != OutputLen(int64(len(x)), p[0], p[1]) {
			t.Fatalf("%v: %d samples, want %d", p, len(whole), OutputLen(int64(len(x)), p[0], p[1]))
		}
		r, _ := New(p[0], p[1])
		for trial := range 3 {
			var got []float32
			for rest := x; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN([]int{7, 500, 5000}[trial]))
				got = r.Process(got, rest[:n])
				rest = rest[n:]
			}
			got = r.Flush(got)
			if len(got) != len(whole) {
				t.Fatalf("%v trial %d: chunked gave %d samples, whole %d", p, trial, len(got), len(whole))
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(whole[i]) {
					t.Fatalf("%v trial %d: sample %d chunked %v, whole %v", p, trial, i, got[i], whole[i])
				}
			}
		}
	}
}

// TestInterpolatedPhases covers a ratio with more than 1024 phases
// (44100 → 16001 Hz), which interpolates its filter table.
func TestInterpolatedPhases(t *testing.T) {
	r, _ := New(44100, 16001)
	if r.exact {
		t.Fatal("44100 → 16001 should use the interpolated table")
	}
	y, _ := Resample(tone(22050, 44100, 1000, 0.5), 44100, 16001)
	amp, res := fit(y, 16001, 1000)
	if math.Abs(20*math.Log10(amp/0.5)) > 0.001 || 20*math.Log10(res/(0.5/math.Sqrt2)) > -90 {
		t.Errorf("1 kHz through 44100 → 16001: gain %.5f, residual %.1f dB", amp/0.5, 20*math.Log10(res/(0.5/math.Sqrt2)))
	}
}

func TestStreamingLatencyAndReset(t *testing.T) {
	r, _ := New(48000, 16000)
	out := r.Process(nil, make([]float32, 100))
	// Output n needs input up to 3n + Lookahead.
	if want := max(0, (100-r.Lookahead()+2)/3); len(out) > want+1 {
		t.Errorf("%d outputs after 100 inputs with lookahead %d", len(out), r.Lookahead())
	}
	r.Reset()
	a := r.Flush(r.Process(nil, tone(4800, 48000, 440, 0.5)))
	b, _ := Resample(tone(4800, 48000, 440, 0.5), 48000, 16000)
	for i := range b {
		if a[i] != b[i] {
			t.Fatalf("after Reset, sample %d differs", i)
		}
	}
}

func TestBadRates(t *testing.T) {
	for _, p := range [][2]int{{0, 16000}, {16000, -1}, {MaxRate + 1, 16000}} {
		if _, err := New(p[0], p[1]); !errors.Is(err, ErrRate) {
			t.Errorf("New(%d, %d): err = %v, want ErrRate", p[0], p[1], err)
		}
	}
	if _, err := NewQuality(16000, 8000, Quality{Passband: 1.5}); !errors.Is(err, ErrRate) {
		t.Errorf("passband 1.5: err = %v", err)
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	r, _ := New(44100, 16000)
	chunk := make([]float32, 441)
	out := make([]float32, 0, 1024)
	r.Process(out, chunk)
	if a := testing.AllocsPerRun(50, func() { out = r.Process(out[:0], chunk) }); a != 0 {
		t.Errorf("%v allocations per Process", a)
	}
}

// BenchmarkResample reports throughput as multiples of real time.
func BenchmarkResample(b *testing.B) {
	for _, p := range [][2]int{{24000, 16000}, {44100, 16000}, {48000, 16000}, {16000, 48000}} {
		b.Run(fmt.Sprintf("%dto%d", p[0], p[1]), func(b *testing.B) {
			r, _ := New(p[0], p[1])
			x := tone(p[0], p[0], 440, 0.5) // one second
			out := make([]float32, 0, p[1]+10)
			b.ResetTimer()
			for range b.N {
				out = r.Process(out[:0], x)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "x-realtime")
		})
	}
}
