package kokoro

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"
)

// BenchmarkHarmonicSpectrum computes the generator's source spectrogram on
// the host for a streamed chunk's first window (35 frames, 0.9 s) and for
// a whole 10.7 s chunk, from the fox golden's F0 curve repeated.
func BenchmarkHarmonicSpectrum(b *testing.B) {
	g := loadGolden(b, "fox_af_heart")
	lin := []float32{0.1, -0.2, 0.3, -0.1, 0.05, 0.02, -0.03, 0.01, 0.04}
	for _, tc := range []struct {
		name   string
		frames int
	}{{"window-35", 35}, {"chunk-429", 429}} {
		f0 := make([]float32, 2*tc.frames)
		for i := range f0 {
			f0[i] = g.f0[i%len(g.f0)]
		}
		b.Run(tc.name, func(b *testing.B) {
			c0 := procstat.CPUTime()
			for range b.N {
				harmonicSpectrum(f0, lin, 0.01)
			}
			b.ReportMetric(float64((procstat.CPUTime()-c0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
		b.Run(tc.name+"/source", func(b *testing.B) {
			c0 := procstat.CPUTime()
			for range b.N {
				harmonicSource(f0, lin, 0.01)
			}
			b.ReportMetric(float64((procstat.CPUTime()-c0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// TestBluesteinMatchesReference checks the table-driven transform
// against onnxruntime's dft_bluestein_z_chirp as first ported here (bit
// reversals per butterfly, every output divided by m): the same bits on
// random frames, silence, constants and a single impulse, where the
// rounding noise decides the phase of the zero bins.
func TestBluesteinMatchesReference(t *testing.T) {
	b := newBluestein(nFFT)
	win := stftWindow()
	r := rand.New(rand.NewPCG(5, 6))
	frames := [][]float32{make([]float32, nFFT), make([]float32, nFFT), make([]float32, nFFT)}
	for i := range nFFT {
		frames[1][i] = 0.0123
	}
	frames[2][7] = -0.5
	for range 200 {
		f := make([]float32, nFFT)
		for i := range f {
			f[i] = float32(r.NormFloat64()) * 0.1
		}
		frames = append(frames, f)
	}
	s := b.scratch()
	for n, x := range frames {
		var got, want [specBins]complex64
		b.transform(got[:], x, win[:], s)
		refTransform(b, want[:], x, win[:])
		for k := range got {
			if math.Float32bits(real(got[k])) != math.Float32bits(real(want[k])) || math.Float32bits(imag(got[k])) != math.Float32bits(imag(want[k])) {
				t.Fatalf("frame %d bin %d: %v, reference %v", n, k, got[k], want[k])
			}
		}
	}
}

// refTransform is the reference for TestBluesteinMatchesReference.
func refTransform(b *bluestein, out []complex64, x, window []float32) {
	fft := func(dst, src []complex64, inverse bool) {
		for i := range b.m {
			dst[i] = src[b.rev(i, b.bits)]
		}
		var sig uint
		for size := 2; size <= b.m; size <<= 1 {
			mid := size >> 1
			sig++
			for k := range mid {
				w1, w2 := b.v[b.rev(k, sig)], b.v[b.rev(mid+k, sig)]
				for j := 0; j < b.m; j += size {
					even, odd := dst[k+j], dst[k+j+mid]
					p, q := cmul(w1, odd), cmul(w2, odd)
					dst[k+j] = complex(real(even)+real(p), imag(even)+imag(p))
					dst[k+j+mid] = complex(real(even)+real(q), imag(even)+imag(q))
				}
			}
		}
		if inverse {
			s := float32(b.m)
			for i, c := range dst {
				dst[i] = complex(real(c)/s, imag(c)/s)
			}
		}
	}
	bb, bFFT := make([]complex64, b.m), make([]complex64, b.m)
	for k := range b.n {
		bb[k] = complex(real(b.chirp[k]), -imag(b.chirp[k]))
	}
	for k := b.m - b.n + 1; k < b.m; k++ {
		bb[k] = bb[b.m-k]
	}
	fft(bFFT, bb, false)
	a, af := make([]complex64, b.m), make([]complex64, b.m)
	for k, v := range x {
		a[k] = cmul(complex(v*window[k], 0), b.chirp[k])
	}
	fft(af, a, false)
	for i := range af {
		af[i] = cmul(af[i], bFFT[i])
	}
	fft(a, af, true)
	for i := range out {
		c := a[0]
		if i > 0 {
			c = a[b.m-i]
		}
		out[i] = cmul(c, b.chirp[i])
	}
}
