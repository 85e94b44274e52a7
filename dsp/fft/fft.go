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

// pass runs one Stockham stage: for every block offset q < s and butterfly
// p < m it reads radix inputs m·s apart, does a radix-point DFT, multiplies
// by twiddles and writes the outputs s apart.
func (p *Plan) pass(st *stage, y, x []complex64) {
	m, s := st.m, st.s
	ms := m * s
	switch st.radix {
	case 2:
		for q := range m {
			w := st.tw[q]
			for j := range s {
				a0, a1 := x[j+s*q], x[j+s*q+ms]
				y[j+s*2*q] = a0 + a1
				y[j+s*(2*q+1)] = (a0 - a1) * w
			}
		}
	case 3:
		const sin60 = 0.86602540378443864676
		for q := range m {
			w1, w2 := st.tw[2*q], st.tw[2*q+1]
			for j := range s {
				i := j + s*q
				a0, a1, a2 := x[i], x[i+ms], x[i+2*ms]
				t1 := a1 + a2
				t2 := a0 - t1*0.5
				d := a1 - a2
				t3 := complex(imag(d)*sin60, -real(d)*sin60) // -i·sin60·d
				o := j + s*3*q
				y[o] = a0 + t1
				y[o+s] = (t2 + t3) * w1
				y[o+2*s] = (t2 - t3) * w2
			}
		}
	case 4:
		for q := range m {
			w1, w2, w3 := st.tw[3*q], st.tw[3*q+1], st.tw[3*q+2]
			for j := range s {
				i := j + s*q
				a0, a1, a2, a3 := x[i], x[i+ms], x[i+2*ms], x[i+3*ms]
				t0, t1 := a0+a2, a0-a2
				t2 := a1 + a3
				d := a1 - a3
				t3 := complex(imag(d), -real(d)) // -i·d
				o := j + s*4*q
				y[o] = t0 + t2
				y[o+s] = (t1 + t3) * w1
				y[o+2*s] = (t0 - t2) * w2
				y[o+3*s] = (t1 - t3) * w3
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
			tw := st.tw[4*q : 4*q+4]
			for j := range s {
				i := j + s*q
				a0, a1, a2, a3, a4 := x[i], x[i+ms], x[i+2*ms], x[i+3*ms], x[i+4*ms]
				b1, b2 := a1+a4, a2+a3
				d1, d2 := a1-a4, a2-a3
				r1 := a0 + b1*c1 + b2*c2
				r2 := a0 + b1*c2 + b2*c1
				i1 := d1*s1 + d2*s2
				i2 := d1*s2 - d2*s1
				// -i·z = (im, -re)
				m1 := complex(imag(i1), -real(i1))
				m2 := complex(imag(i2), -real(i2))
				o := j + s*5*q
				y[o] = a0 + b1 + b2
				y[o+s] = (r1 + m1) * tw[0]
				y[o+2*s] = (r2 + m2) * tw[1]
				y[o+3*s] = (r2 - m2) * tw[2]
				y[o+4*s] = (r1 - m1) * tw[3]
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
					var acc complex64
					k := 0
					for t := range r {
						acc += a[t] * st.roots[k]
						k += u
						if k >= r {
							k -= r
						}
					}
					if u > 0 {
						acc *= tw[u-1]
					}
					y[o+u*s] = acc
				}
			}
		}
	}
}
