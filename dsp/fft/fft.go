// Package fft computes discrete Fourier transforms of any length in float32
// with precomputed plans: a complex FFT (Plan) and a real-input FFT
// (RealPlan) with the conventions of numpy.fft / torch.fft (forward
// unscaled, e^{-2πikn/N}; inverse scaled by 1/N).
//
// Lengths factor into radices 4, 2, 3 and 5, which have hand-written
// butterflies; any other prime factor p is done directly in O(p) per
// output, so a length with a large prime factor is slower but still exact.
// A plan carries its own scratch space: calls allocate nothing, and a plan
// must not be used by two goroutines at once (Clone gives each goroutine
// its own, sharing the tables).
package fft

import (
	"fmt"
	"math"
)

// stage is one radix pass of the Stockham autosort algorithm.
type stage struct {
	radix int
	m     int         // butterflies per block: the remaining length / radix
	s     int         // stride: product of the radices already done
	tw    []complex64 // tw[p*(radix-1)+u-1] = exp(-2πi·p·u/(m·radix))
	roots []complex64 // exp(-2πi·k/radix), only for generic radices
}

// Plan is a precomputed complex FFT of one length.
type Plan struct {
	n      int
	stages []stage // shared between clones, never written after NewPlan
	work   []complex64
	abuf   []complex64 // generic-radix scratch
}

// NewPlan returns a plan for complex transforms of length n ≥ 1.
func NewPlan(n int) (*Plan, error) {
	if n < 1 {
		return nil, fmt.Errorf("fft: length %d, want ≥ 1", n)
	}
	p := &Plan{n: n, work: make([]complex64, n)}
	remaining, s := n, 1
	maxRadix := 0
	for _, r := range factor(n) {
		m := remaining / r
		st := stage{radix: r, m: m, s: s, tw: make([]complex64, m*(r-1))}
		for q := range m {
			for u := 1; u < r; u++ {
				st.tw[q*(r-1)+u-1] = cis(-2 * math.Pi * float64(q*u) / float64(remaining))
			}
		}
		if r > 5 && r != 4 {
			st.roots = make([]complex64, r)
			for k := range r {
				st.roots[k] = cis(-2 * math.Pi * float64(k) / float64(r))
			}
		}
		maxRadix = max(maxRadix, r)
		p.stages = append(p.stages, st)
		remaining, s = m, s*r
	}
	p.abuf = make([]complex64, maxRadix)
	return p, nil
}

// factor splits n into radices, 4s first (fewest passes), then 2, 3, 5 and
// any remaining primes in increasing order.
func factor(n int) []int {
	var f []int
	for n%4 == 0 {
		f = append(f, 4)
		n /= 4
	}
	for _, r := range []int{2, 3, 5} {
		for n%r == 0 {
			f = append(f, r)
			n /= r
		}
	}
	for r := 7; r*r <= n; r += 2 {
		for n%r == 0 {
			f = append(f, r)
			n /= r
		}
	}
	if n > 1 {
		f = append(f, n)
	}
	return f
}

func cis(theta float64) complex64 {
	s, c := math.Sincos(theta)
	return complex(float32(c), float32(s))
}

// Len returns the transform length.
func (p *Plan) Len() int { return p.n }

// Clone returns a plan of the same length that shares p's read-only tables
// but has its own scratch, for use on another goroutine.
func (p *Plan) Clone() *Plan {
	maxRadix := len(p.abuf)
	return &Plan{n: p.n, stages: p.stages, work: make([]complex64, p.n), abuf: make([]complex64, maxRadix)}
}

// Forward sets dst to the DFT of src: dst[k] = Σ src[j]·e^{-2πijk/n}.
// dst and src must have length n; they may be the same slice (in place)
// but must not otherwise overlap. src is not modified unless it is dst.
func (p *Plan) Forward(dst, src []complex64) {
	if len(dst) != p.n || len(src) != p.n {
		panic(fmt.Sprintf("fft: Forward of length %d given dst %d, src %d", p.n, len(dst), len(src)))
	}
	p.run(dst, src)
}

// Inverse sets dst to the inverse DFT of src, scaled by 1/n so that
// Inverse(Forward(x)) = x. Length and aliasing rules are as for Forward.
func (p *Plan) Inverse(dst, src []complex64) {
	if len(dst) != p.n || len(src) != p.n {
		panic(fmt.Sprintf("fft: Inverse of length %d given dst %d, src %d", p.n, len(dst), len(src)))
	}
	// ifft(x) = conj(fft(conj(x)))/n
	for i, v := range src {
		dst[i] = complex(real(v), -imag(v))
	}
	p.run(dst, dst)
	scale := 1 / float32(p.n)
	for i, v := range dst {
		dst[i] = complex(real(v)*scale, -imag(v)*scale)
	}
}

// run executes the stages, ping-ponging between dst and the work buffer so
// that the last stage lands in dst.
func (p *Plan) run(dst, src []complex64) {
	k := len(p.stages)
	if k == 0 {
		copy(dst, src)
		return
	}
	x := src
	a, b := p.work, dst // outputs of stages 1, 3, 5, ... go to a
	if k%2 == 1 {
		a, b = dst, p.work
		if &src[0] == &dst[0] {
			copy(p.work, src)
			x = p.work
		}
	}
	for i := range p.stages {
		y := a
		if i%2 == 1 {
			y = b
		}
		p.pass(&p.stages[i], y, x)
		x = y
	}
}

// pass runs one Stockham stage: for every block offset j < s and butterfly
// q < m it reads radix inputs m·s apart, does a radix-point DFT, multiplies
// by twiddles and writes the outputs s apart. Arithmetic is spelled out in
// float32: Go widens complex64 products to float64, which costs twice.
func (p *Plan) pass(st *stage, y, x []complex64) {
	m, s := st.m, st.s
	ms := m * s
	if s == 1 && st.radix == 4 {
		// First pass: one butterfly per block, so skip the inner loop's
		// slicing.
		x0, x1, x2, x3 := x[:m], x[m:2*m], x[2*m:3*m], x[3*m:4*m]
		y = y[:4*m]
		tw := st.tw[:3*m]
		for q := range x0 {
			a0, a1, a2, a3 := x0[q], x1[q], x2[q], x3[q]
			t0r, t0i := real(a0)+real(a2), imag(a0)+imag(a2)
			t1r, t1i := real(a0)-real(a2), imag(a0)-imag(a2)
			t2r, t2i := real(a1)+real(a3), imag(a1)+imag(a3)
			t3r, t3i := imag(a1)-imag(a3), real(a3)-real(a1)
			y[4*q] = complex(t0r+t2r, t0i+t2i)
			y[4*q+1] = mul(complex(t1r+t3r, t1i+t3i), tw[3*q])
			y[4*q+2] = mul(complex(t0r-t2r, t0i-t2i), tw[3*q+1])
			y[4*q+3] = mul(complex(t1r-t3r, t1i-t3i), tw[3*q+2])
		}
		return
	}
	if m == 1 && st.radix == 5 {
		// Last pass of a length with a factor 5: all twiddles are 1.
		last5(y[:5*s], x[:5*s], s)
		return
	}
	switch st.radix {
	case 2:
		for q := range m {
			w := st.tw[q]
			xa, xb := x[s*q:s*q+s], x[s*q+ms:s*q+ms+s]
			y0, y1 := y[2*s*q:2*s*q+s], y[2*s*q+s:2*s*q+2*s]
			for j := range xa {
				a0, a1 := xa[j], xb[j]
				y0[j] = a0 + a1
				y1[j] = mul(a0-a1, w)
			}
		}
	case 3:
		const sin60 = 0.86602540378443864676
		for q := range m {
			w1, w2 := st.tw[2*q], st.tw[2*q+1]
			i0 := s * q
			x0, x1, x2 := x[i0:i0+s], x[i0+ms:i0+ms+s], x[i0+2*ms:i0+2*ms+s]
			o := 3 * s * q
			y0, y1, y2 := y[o:o+s], y[o+s:o+2*s], y[o+2*s:o+3*s]
			for j := range x0 {
				a0, a1, a2 := x0[j], x1[j], x2[j]
				t1r, t1i := real(a1)+real(a2), imag(a1)+imag(a2)
				t2r, t2i := real(a0)-0.5*t1r, imag(a0)-0.5*t1i
				// t3 = -i·sin60·(a1 − a2)
				t3r, t3i := sin60*(imag(a1)-imag(a2)), -sin60*(real(a1)-real(a2))
				y0[j] = complex(real(a0)+t1r, imag(a0)+t1i)
				y1[j] = mul(complex(t2r+t3r, t2i+t3i), w1)
				y2[j] = mul(complex(t2r-t3r, t2i-t3i), w2)
			}
		}
	case 4:
		for q := range m {
			w1, w2, w3 := st.tw[3*q], st.tw[3*q+1], st.tw[3*q+2]
			i0 := s * q
			x0, x1, x2, x3 := x[i0:i0+s], x[i0+ms:i0+ms+s], x[i0+2*ms:i0+2*ms+s], x[i0+3*ms:i0+3*ms+s]
			o := 4 * s * q
			y0, y1, y2, y3 := y[o:o+s], y[o+s:o+2*s], y[o+2*s:o+3*s], y[o+3*s:o+4*s]
			for j := range x0 {
				a0, a1, a2, a3 := x0[j], x1[j], x2[j], x3[j]
				t0r, t0i := real(a0)+real(a2), imag(a0)+imag(a2)
				t1r, t1i := real(a0)-real(a2), imag(a0)-imag(a2)
				t2r, t2i := real(a1)+real(a3), imag(a1)+imag(a3)
				// t3 = -i·(a1 − a3)
				t3r, t3i := imag(a1)-imag(a3), real(a3)-real(a1)
				y0[j] = complex(t0r+t2r, t0i+t2i)
				y1[j] = mul(complex(t1r+t3r, t1i+t3i), w1)
				y2[j] = mul(complex(t0r-t2r, t0i-t2i), w2)
				y3[j] = mul(complex(t1r-t3r, t1i-t3i), w3)
			}
		}
	case 5:
		const (
			c1 = 0.30901699437494742410  // cos(2π/5)
			c2 = -0.80901699437494742410 // cos(4π/5)
			s1 = 0.95105651629515357212  // sin(2π/5)
			s2 = 0.58778525229247312917  // sin(4π/5)
		)
		for q := range m {
			tw := st.tw[4*q : 4*q+4 : 4*q+4]
			i0 := s * q
			x0, x1, x2, x3, x4 := x[i0:i0+s], x[i0+ms:i0+ms+s], x[i0+2*ms:i0+2*ms+s], x[i0+3*ms:i0+3*ms+s], x[i0+4*ms:i0+4*ms+s]
			o := 5 * s * q
			y0, y1, y2, y3, y4 := y[o:o+s], y[o+s:o+2*s], y[o+2*s:o+3*s], y[o+3*s:o+4*s], y[o+4*s:o+5*s]
			for j := range x0 {
				a0, a1, a2, a3, a4 := x0[j], x1[j], x2[j], x3[j], x4[j]
				b1r, b1i := real(a1)+real(a4), imag(a1)+imag(a4)
				b2r, b2i := real(a2)+real(a3), imag(a2)+imag(a3)
				d1r, d1i := real(a1)-real(a4), imag(a1)-imag(a4)
				d2r, d2i := real(a2)-real(a3), imag(a2)-imag(a3)
				r1r, r1i := real(a0)+c1*b1r+c2*b2r, imag(a0)+c1*b1i+c2*b2i
				r2r, r2i := real(a0)+c2*b1r+c1*b2r, imag(a0)+c2*b1i+c1*b2i
				i1r, i1i := s1*d1r+s2*d2r, s1*d1i+s2*d2i
				i2r, i2i := s2*d1r-s1*d2r, s2*d1i-s1*d2i
				// m = -i·i_k = (im, -re)
				y0[j] = complex(real(a0)+b1r+b2r, imag(a0)+b1i+b2i)
				y1[j] = mul(complex(r1r+i1i, r1i-i1r), tw[0])
				y2[j] = mul(complex(r2r+i2i, r2i-i2r), tw[1])
				y3[j] = mul(complex(r2r-i2i, r2i+i2r), tw[2])
				y4[j] = mul(complex(r1r-i1i, r1i+i1r), tw[3])
			}
		}
	default:
		r := st.radix
		a := p.abuf[:r]
		for q := range m {
			tw := st.tw[(r-1)*q : (r-1)*(q+1)]
			for j := range s {
				i := j + s*q
				for t := range r {
					a[t] = x[i+t*ms]
				}
				o := j + s*r*q
				for u := range r {
					var accr, acci float32
					k := 0
					for t := range r {
						v := mul(a[t], st.roots[k])
						accr += real(v)
						acci += imag(v)
						k += u
						if k >= r {
							k -= r
						}
					}
					acc := complex(accr, acci)
					if u > 0 {
						acc = mul(acc, tw[u-1])
					}
					y[o+u*s] = acc
				}
			}
		}
	}
}

// mul multiplies in float32 (see pass).
func mul(a, b complex64) complex64 {
	ar, ai, br, bi := real(a), imag(a), real(b), imag(b)
	return complex(ar*br-ai*bi, ar*bi+ai*br)
}

// last5 is the final radix-5 pass, where every twiddle is 1.
func last5(y, x []complex64, s int) {
	const (
		c1 = 0.30901699437494742410
		c2 = -0.80901699437494742410
		s1 = 0.95105651629515357212
		s2 = 0.58778525229247312917
	)
	x0, x1, x2, x3, x4 := x[:s], x[s:2*s], x[2*s:3*s], x[3*s:4*s], x[4*s:5*s]
	y0, y1, y2, y3, y4 := y[:s], y[s:2*s], y[2*s:3*s], y[3*s:4*s], y[4*s:5*s]
	for j := range x0 {
		a0, a1, a2, a3, a4 := x0[j], x1[j], x2[j], x3[j], x4[j]
		b1r, b1i := real(a1)+real(a4), imag(a1)+imag(a4)
		b2r, b2i := real(a2)+real(a3), imag(a2)+imag(a3)
		d1r, d1i := real(a1)-real(a4), imag(a1)-imag(a4)
		d2r, d2i := real(a2)-real(a3), imag(a2)-imag(a3)
		r1r, r1i := real(a0)+c1*b1r+c2*b2r, imag(a0)+c1*b1i+c2*b2i
		r2r, r2i := real(a0)+c2*b1r+c1*b2r, imag(a0)+c2*b1i+c1*b2i
		i1r, i1i := s1*d1r+s2*d2r, s1*d1i+s2*d2i
		i2r, i2i := s2*d1r-s1*d2r, s2*d1i-s1*d2i
		y0[j] = complex(real(a0)+b1r+b2r, imag(a0)+b1i+b2i)
		y1[j] = complex(r1r+i1i, r1i-i1r)
		y2[j] = complex(r2r+i2i, r2i-i2r)
		y3[j] = complex(r2r-i2i, r2i+i2r)
		y4[j] = complex(r1r-i1i, r1i+i1r)
	}
}
