package stft

import (
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/dsp/window"
)

// refSTFT is torch.stft written out in float64 from its documentation:
// pad, frame, window (centered in n_fft), DFT of each frame, onesided.
// Returns [frame][bin].
func refSTFT(x []float32, c Config) [][]complex128 {
	hop, winLen := c.Hop, c.WinLength
	if hop == 0 {
		hop = c.NFFT / 4
	}
	if winLen == 0 {
		winLen = c.NFFT
	}
	win := make([]float64, c.NFFT)
	for i := range winLen {
		w := 1.0
		if c.Window != nil {
			w = float64(c.Window[i])
		}
		win[(c.NFFT-winLen)/2+i] = w
	}
	sig := make([]float64, 0, len(x)+c.NFFT)
	p := 0
	if c.Center {
		p = c.NFFT / 2
	}
	n := len(x)
	for i := -p; i < n+p; i++ {
		j := i
		switch {
		case i >= 0 && i < n:
		case c.PadMode == Reflect:
			if i < 0 {
				j = -i
			} else {
				j = 2*(n-1) - i
			}
		case c.PadMode == Replicate:
			j = min(max(i, 0), n-1)
		default:
			j = -1
		}
		v := 0.0
		if j >= 0 {
			v = float64(x[j])
		}
		sig = append(sig, v)
	}
	var out [][]complex128
	for t := 0; t*hop+c.NFFT <= len(sig); t++ {
		row := make([]complex128, c.NFFT/2+1)
		for k := range row {
			for i := range c.NFFT {
				row[k] += complex(sig[t*hop+i]*win[i], 0) * cmplx.Rect(1, -2*math.Pi*float64(k*i%c.NFFT)/float64(c.NFFT))
			}
			if c.Normalized {
				row[k] /= complex(math.Sqrt(float64(c.NFFT)), 0)
			}
		}
		out = append(out, row)
	}
	return out
}

// refISTFT is torch.istft in float64: irfft each frame (imaginary DC and
// Nyquist dropped), window, overlap-add, divide by the overlap-added
// squared window, trim the center padding.
func refISTFT(spec [][]complex128, c Config, length int) []float64 {
	hop, winLen := c.Hop, c.WinLength
	if hop == 0 {
		hop = c.NFFT / 4
	}
	if winLen == 0 {
		winLen = c.NFFT
	}
	win := make([]float64, c.NFFT)
	for i := range winLen {
		w := 1.0
		if c.Window != nil {
			w = float64(c.Window[i])
		}
		win[(c.NFFT-winLen)/2+i] = w
	}
	N := c.NFFT
	full := N + hop*(len(spec)-1)
	y := make([]float64, full)
	env := make([]float64, full)
	for t, row := range spec {
		for i := range N {
			var acc float64
			for k := range N {
				var X complex128
				switch {
				case k < len(row):
					X = row[k]
				default:
					X = cmplx.Conj(row[N-k])
				}
				if k == 0 || 2*k == N {
					X = complex(real(X), 0)
				}
				acc += real(X * cmplx.Rect(1, 2*math.Pi*float64(k*i%N)/float64(N)))
			}
			acc /= float64(N)
			if c.Normalized {
				acc *= math.Sqrt(float64(N))
			}
			y[t*hop+i] += acc * win[i]
			env[t*hop+i] += win[i] * win[i]
		}
	}
	start, end := 0, full
	if c.Center {
		start, end = N/2, full-N/2
	}
	if length >= 0 {
		end = start + length
	}
	out := make([]float64, end-start)
	for i := range out {
		if start+i < full {
			out[i] = y[start+i] / env[start+i]
		}
	}
	return out
}

var configs = []struct {
	name string
	cfg  Config
}{
	{"whisper 400/160 hann reflect", Config{NFFT: 400, Hop: 160, Window: window.Hann(400, true), Center: true}},
	{"kokoro 20/5 hann reflect", Config{NFFT: 20, Hop: 5, Window: window.Hann(20, true), Center: true}},
	{"win 10 in 16, constant", Config{NFFT: 16, Hop: 4, WinLength: 10, Window: window.Hann(10, true), Center: true, PadMode: Constant}},
	{"odd 15/5 replicate normalized", Config{NFFT: 15, Hop: 5, Window: window.Hann(15, true), Center: true, PadMode: Replicate, Normalized: true}},
	{"rectangular 8 default hop, no center", Config{NFFT: 8}},
}

func TestForwardMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range configs {
		for _, n := range []int{tc.cfg.NFFT + 1, 3*tc.cfg.NFFT + 7, 1000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.Float64()*2 - 1)
			}
			s, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := refSTFT(x, tc.cfg)
			for _, layout := range []Layout{BinsMajor, FramesMajor} {
				re, im, frames, err := s.Forward(nil, nil, layout, x)
				if err != nil {
					t.Fatalf("%s n=%d: %v", tc.name, n, err)
				}
				if frames != len(want) || frames != s.Frames(n) {
					t.Fatalf("%s n=%d: %d frames, Frames() %d, want %d", tc.name, n, frames, s.Frames(n), len(want))
				}
				var maxErr float64
				for tt, row := range want {
					for k, w := range row {
						i := index(layout, k, tt, s.Bins(), frames)
						maxErr = max(maxErr, cmplx.Abs(complex(float64(re[i]), float64(im[i]))-w))
					}
				}
				if maxErr > 2e-5 {
					t.Errorf("%s n=%d layout %d: max abs err %.3g", tc.name, n, layout, maxErr)
				}
			}
		}
	}
}

func TestInverseMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range configs[:4] { // the last one violates NOLA
		s, _ := New(tc.cfg)
		frames := 13
		spec := make([][]complex128, frames)
		re := make([]float32, frames*s.Bins())
		im := make([]float32, frames*s.Bins())
		for tt := range spec {
			spec[tt] = make([]complex128, s.Bins())
			for k := range spec[tt] {
				v := complex(float32(rng.NormFloat64()), float32(rng.NormFloat64()))
				spec[tt][k] = complex128(v)
				i := index(FramesMajor, k, tt, s.Bins(), frames)
				re[i], im[i] = real(v), imag(v)
			}
		}
		for _, length := range []int{-1, 0, 5, s.OutputLen(frames) + 9} {
			want := refISTFT(spec, tc.cfg, length)
			got, err := s.Inverse(nil, re, im, FramesMajor, length)
			if tc.cfg.WinLength != 0 && length > s.OutputLen(frames) {
				// The zero-padded window leaves the overlap-add empty past
				// the last frame's window: torch refuses this too.
				if !errors.Is(err, ErrNOLA) {
					t.Errorf("%s length %d: err = %v, want ErrNOLA", tc.name, length, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s length %d: %v", tc.name, length, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s length %d: %d samples, want %d", tc.name, length, len(got), len(want))
			}
			var maxErr float64
			for i := range want {
				maxErr = max(maxErr, math.Abs(float64(got[i])-want[i]))
			}
			if maxErr > 1e-5 {
				t.Errorf("%s length %d: max abs err %.3g", tc.name, length, maxErr)
			}
		}
	}
}

// TestPerfectReconstruction is the acceptance check istft(stft(x)) ≈ x.
func TestPerfectReconstruction(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range configs[:4] {
		s, _ := New(tc.cfg)
		for _, n := range []int{tc.cfg.NFFT, 1234, 24000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.Float64()*2 - 1)
			}
			for _, layout := range []Layout{BinsMajor, FramesMajor} {
				re, im, _, err := s.Forward(nil, nil, layout, x)
				if err != nil {
					t.Fatal(err)
				}
				y, err := s.Inverse(nil, re, im, layout, n)
				if err != nil {
					t.Fatal(err)
				}
				var maxErr float64
				for i := range x {
					maxErr = max(maxErr, math.Abs(float64(y[i]-x[i])))
				}
				if maxErr > 1e-5 {
					t.Errorf("%s n=%d: max |istft(stft(x)) − x| = %.3g, want ≤ 1e-5", tc.name, n, maxErr)
				}
			}
		}
	}
}

func TestPolar(t *testing.T) {
	re := []float32{1, 0, -1, 0, 3, -2}
	im := []float32{0, 1, 0, -1, 4, 0}
	mag, ph := make([]float32, 6), make([]float32, 6)
	ToPolar(mag, ph, re, im)
	wantPh := []float64{0, math.Pi / 2, math.Pi, -math.Pi / 2, math.Atan2(4, 3), math.Pi}
	for i := range re {
		if math.Abs(float64(ph[i])-wantPh[i]) > 1e-6 || (i == 4 && mag[i] != 5) {
			t.Fatalf("ToPolar[%d] = %v∠%v", i, mag[i], ph[i])
		}
	}
	r2, i2 := make([]float32, 6), make([]float32, 6)
	FromPolar(r2, i2, mag, ph)
	for i := range re {
		if math.Abs(float64(r2[i]-re[i])) > 1e-6 || math.Abs(float64(i2[i]-im[i])) > 1e-6 {
			t.Fatalf("round trip [%d]: %v+%vi, want %v+%vi", i, r2[i], i2[i], re[i], im[i])
		}
	}
}

func TestInversePolar(t *testing.T) {
	s, _ := New(Config{NFFT: 20, Hop: 5, Window: window.Hann(20, true), Center: true})
	x := make([]float32, 500)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.37))
	}
	re, im, _, _ := s.Forward(nil, nil, BinsMajor, x)
	mag, ph := make([]float32, len(re)), make([]float32, len(re))
	ToPolar(mag, ph, re, im)
	var y []float32
	for range 2 { // the second call reuses every buffer
		var err error
		y, err = s.InversePolar(y, mag, ph, BinsMajor, len(x))
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range x {
		if math.Abs(float64(y[i]-x[i])) > 1e-5 {
			t.Fatalf("sample %d: %v, want %v", i, y[i], x[i])
		}
	}
	if a := testing.AllocsPerRun(5, func() { y, _ = s.InversePolar(y, mag, ph, BinsMajor, len(x)) }); a != 0 {
		t.Errorf("%v allocations per InversePolar", a)
	}
	if _, err := s.InversePolar(nil, mag, ph[1:], BinsMajor, -1); !errors.Is(err, ErrShape) {
		t.Errorf("mismatched planes: %v", err)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []Config{
		{NFFT: 0},
		{NFFT: 8, Hop: -1},
		{NFFT: 8, WinLength: 9},
		{NFFT: 8, Window: make([]float32, 7)},
		{NFFT: 8, PadMode: 7},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err = %v, want ErrConfig", c, err)
		}
	}
	s, _ := New(Config{NFFT: 20, Hop: 5, Window: window.Hann(20, true), Center: true})
	if _, _, _, err := s.Forward(nil, nil, BinsMajor, make([]float32, 10)); !errors.Is(err, ErrTooShort) {
		t.Errorf("reflect pad of 10 on 10 samples: err = %v, want ErrTooShort", err)
	}
	if _, err := s.Inverse(nil, make([]float32, 22), make([]float32, 21), BinsMajor, -1); !errors.Is(err, ErrShape) {
		t.Errorf("mismatched planes: err = %v, want ErrShape", err)
	}
	if _, err := s.Inverse(nil, make([]float32, 12), make([]float32, 12), BinsMajor, -1); !errors.Is(err, ErrShape) {
		t.Errorf("12 values for 11 bins: err = %v, want ErrShape", err)
	}
	nc, _ := New(Config{NFFT: 20, Hop: 5, Window: window.Hann(20, true)})
	if _, err := nc.Inverse(nil, make([]float32, 33), make([]float32, 33), BinsMajor, -1); !errors.Is(err, ErrNOLA) {
		t.Errorf("Hann without center: err = %v, want ErrNOLA", err)
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	s, _ := New(Config{NFFT: 20, Hop: 5, Window: window.Hann(20, true), Center: true})
	x := make([]float32, 2400)
	re, im, _, _ := s.Forward(nil, nil, BinsMajor, x)
	y, _ := s.Inverse(nil, re, im, BinsMajor, -1)
	if a := testing.AllocsPerRun(10, func() {
		re, im, _, _ = s.Forward(re, im, BinsMajor, x)
		y, _ = s.Inverse(y, re, im, BinsMajor, -1)
	}); a != 0 {
		t.Errorf("%v allocations per forward+inverse", a)
	}
}

// BenchmarkKokoroISTFT is one second of 24 kHz audio through Kokoro's
// generator iSTFT (n_fft 20, hop 5, Hann): 4801 frames × 11 bins.
func BenchmarkKokoroISTFT(b *testing.B) {
	s, _ := New(Config{NFFT: 20, Hop: 5, Window: window.Hann(20, true), Center: true})
	frames := 24000/5 + 1
	mag := make([]float32, frames*s.Bins())
	ph := make([]float32, frames*s.Bins())
	for i := range mag {
		mag[i], ph[i] = float32(i%7), float32(i%5)
	}
	var y []float32
	b.ResetTimer()
	for range b.N {
		y, _ = s.InversePolar(y, mag, ph, BinsMajor, -1)
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N)*1e3, "ms/s-of-audio")
}

// BenchmarkWhisperSTFT is 30 s of 16 kHz audio, n_fft 400, hop 160.
func BenchmarkWhisperSTFT(b *testing.B) {
	s, _ := New(Config{NFFT: 400, Hop: 160, Window: window.Hann(400, true), Center: true})
	x := make([]float32, 480000)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	var re, im []float32
	b.ResetTimer()
	for range b.N {
		re, im, _, _ = s.Forward(re, im, FramesMajor, x)
	}
}
