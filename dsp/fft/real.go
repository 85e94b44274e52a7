package fft

import (
	"fmt"
	"math"
)

// RealPlan is a precomputed FFT of real input of one length n: the
// one-sided spectrum of n/2+1 bins, as numpy.fft.rfft / irfft. An even n
// runs as a complex FFT of n/2 points; an odd n as one of n points.
type RealPlan struct {
	n    int
	half *Plan       // n/2 points (even n) or n points (odd n)
	tw   []complex64 // exp(-2πik/n), k < n/2 (even n only)
	buf  []complex64
}

// NewRealPlan returns a plan for real transforms of length n ≥ 1.
func NewRealPlan(n int) (*RealPlan, error) {
	if n < 1 {
		return nil, fmt.Errorf("fft: real length %d, want ≥ 1", n)
	}
	if n%2 == 1 {
		p, err := NewPlan(n)
		if err != nil {
			return nil, err
		}
		return &RealPlan{n: n, half: p, buf: make([]complex64, n)}, nil
	}
	h := n / 2
	p, err := NewPlan(h)
	if err != nil {
		return nil, err
	}
	rp := &RealPlan{n: n, half: p, tw: make([]complex64, h), buf: make([]complex64, h)}
	for k := range h {
		rp.tw[k] = cis(-2 * math.Pi * float64(k) / float64(n))
	}
	return rp, nil
}

// Len returns the (real) transform length n.
func (p *RealPlan) Len() int { return p.n }

// Bins returns n/2+1, the length of the one-sided spectrum.
func (p *RealPlan) Bins() int { return p.n/2 + 1 }

// Clone returns a plan sharing p's tables with its own scratch, for use on
// another goroutine.
func (p *RealPlan) Clone() *RealPlan {
	return &RealPlan{n: p.n, half: p.half.Clone(), tw: p.tw, buf: make([]complex64, len(p.buf))}
}

// Forward sets dst (length n/2+1) to the one-sided DFT of src (length n).
func (p *RealPlan) Forward(dst []complex64, src []float32) {
	if len(src) != p.n || len(dst) != p.Bins() {
		panic(fmt.Sprintf("fft: real Forward of length %d given src %d, dst %d (want %d bins)", p.n, len(src), len(dst), p.Bins()))
	}
	if p.n%2 == 1 {
		for i, v := range src {
			p.buf[i] = complex(v, 0)
		}
		p.half.run(p.buf, p.buf)
		copy(dst, p.buf[:p.Bins()])
		return
	}
	h := p.n / 2
	z := p.buf
	for k := range h {
		z[k] = complex(src[2*k], src[2*k+1])
	}
	p.half.run(z, z)
	// Split the packed spectrum Z of even + i·odd samples into the even
	// part E and odd part O, then X[k] = E[k] + e^{-2πik/n}·O[k].
	z0 := z[0]
	dst[0] = complex(real(z0)+imag(z0), 0)
	dst[h] = complex(real(z0)-imag(z0), 0)
	for k := 1; k < h; k++ {
		a, b := z[k], z[h-k]
		// E = (a + conj b)/2, O = -i·(a − conj b)/2
		er, ei := 0.5*(real(a)+real(b)), 0.5*(imag(a)-imag(b))
		or, oi := 0.5*(imag(a)+imag(b)), -0.5*(real(a)-real(b))
		t := p.tw[k]
		dst[k] = complex(er+real(t)*or-imag(t)*oi, ei+real(t)*oi+imag(t)*or)
	}
}

// Inverse sets dst (length n) to the real inverse DFT of the one-sided
// spectrum src (length n/2+1), scaled by 1/n, as numpy.fft.irfft and
// torch.fft.irfft: the imaginary parts of the DC bin (and of the Nyquist
// bin for even n) are ignored, since a real signal cannot have them.
func (p *RealPlan) Inverse(dst []float32, src []complex64) {
	if len(dst) != p.n || len(src) != p.Bins() {
		panic(fmt.Sprintf("fft: real Inverse of length %d given dst %d, src %d (want %d bins)", p.n, len(dst), len(src), p.Bins()))
	}
	if p.n%2 == 1 {
		b := p.buf
		b[0] = complex(real(src[0]), 0)
		for k := 1; k < p.Bins(); k++ {
			b[k] = src[k]
			b[p.n-k] = complex(real(src[k]), -imag(src[k]))
		}
		p.half.Inverse(b, b)
		for i := range dst {
			dst[i] = real(b[i])
		}
		return
	}
	h := p.n / 2
	z := p.buf
	x0, xh := real(src[0]), real(src[h])
	z[0] = complex((x0+xh)*0.5, (x0-xh)*0.5)
	for k := 1; k < h; k++ {
		a, b := src[k], src[h-k]
		bc := complex(real(b), -imag(b))
		e := (a + bc) * 0.5
		t := p.tw[k]
		o := (a - bc) * complex(real(t)*0.5, -imag(t)*0.5) // ·conj(w^k)/2
		z[k] = e + complex(-imag(o), real(o))              // E + i·O
	}
	p.half.Inverse(z, z)
	for k := range h {
		dst[2*k] = real(z[k])
		dst[2*k+1] = imag(z[k])
	}
}
