package kokoro

import (
	"math"
	"math/bits"
)

// bluestein is onnxruntime's CPU DFT for lengths that are not a power of
// two (its dft_bluestein_z_chirp with fft_radix2), reproduced operation by
// operation in float32 so that its rounding, not just its value, matches
// the STFT of the exported model. Products are wrapped in float32() so the
// Go compiler cannot fuse them into FMAs, which the reference does not use.
type bluestein struct {
	n, m  int         // DFT length, power-of-two convolution length ≥ 2n−1
	bits  uint        // log2(m)
	v     []complex64 // twiddles exp(−2πi·k/m), stored at bit-reversed k
	chirp []complex64 // exp(−πi·k²/n), zero past n
	bFFT  []complex64 // FFT of the conjugate chirp, wrapped symmetrically
	// perm is the bit-reversed load order of fft, and tw its butterflies'
	// twiddle pairs, stage after stage (m−1 pairs): looked up once here
	// rather than bit-reversed per butterfly.
	perm []int
	tw   [][2]complex64
}

func newBluestein(n int) *bluestein {
	m := 1
	for m < 2*n-1 {
		m <<= 1
	}
	b := &bluestein{n: n, m: m, bits: uint(bits.TrailingZeros(uint(m)))}
	const pi = float32(math.Pi)
	av := -(2 * pi) / float32(m) // the angular velocity, forward direction
	b.v = make([]complex64, m)
	for i := range m {
		a := float32(i) * av
		b.v[b.rev(i, b.bits)] = complex(cos32(a), sin32(a))
	}
	b.perm = make([]int, m)
	for i := range m {
		b.perm[i] = b.rev(i, b.bits)
	}
	var sig uint
	for size := 2; size <= m; size <<= 1 {
		mid := size >> 1
		sig++
		for k := range mid {
			b.tw = append(b.tw, [2]complex64{b.v[b.rev(k, sig)], b.v[b.rev(mid+k, sig)]})
		}
	}
	b.chirp = make([]complex64, m)
	bb := make([]complex64, m)
	for k := range n {
		e := -pi * float32(k) * float32(k) / float32(n)
		b.chirp[k] = complex(cos32(e), sin32(e))
		bb[k] = complex(real(b.chirp[k]), -imag(b.chirp[k]))
	}
	for k := m - n + 1; k < m; k++ {
		bb[k] = bb[m-k]
	}
	b.bFFT = make([]complex64, m)
	b.fft(b.bFFT, bb)
	return b
}

func cos32(a float32) float32 { return float32(math.Cos(float64(a))) }
func sin32(a float32) float32 { return float32(math.Sin(float64(a))) }

// rev reverses the low nbits bits of i.
func (b *bluestein) rev(i int, nbits uint) int {
	return int(bits.Reverse32(uint32(i)) >> (32 - nbits))
}

// cmul is a complex product rounded as C's float complex multiply.
func cmul(a, c complex64) complex64 {
	ar, ai, cr, ci := real(a), imag(a), real(c), imag(c)
	return complex(float32(ar*cr)-float32(ai*ci), float32(ar*ci)+float32(ai*cr))
}

// fft is fft_radix2 on m points: bit-reversed load, in-place butterflies
// with the forward twiddles (the inverse reuses them, which reverses its
// output). The inverse's 1/m scale is left to the caller, which needs few
// of its outputs.
func (b *bluestein) fft(dst, src []complex64) {
	dst = dst[:b.m]
	for i, p := range b.perm {
		dst[i] = src[p]
	}
	tw := b.tw
	for size := 2; size <= b.m; size <<= 1 {
		mid := size >> 1
		for k, w := range tw[:mid] {
			w1, w2 := w[0], w[1]
			for j := 0; j < b.m; j += size {
				even, odd := dst[k+j], dst[k+j+mid]
				p, q := cmul(w1, odd), cmul(w2, odd)
				dst[k+j] = complex(real(even)+real(p), imag(even)+imag(p))
				dst[k+j+mid] = complex(real(even)+real(q), imag(even)+imag(q))
			}
		}
		tw = tw[mid:]
	}
}

// scratch returns per-goroutine work buffers for transform.
func (b *bluestein) scratch() [2][]complex64 {
	return [2][]complex64{make([]complex64, b.m), make([]complex64, b.m)}
}

// transform writes the first len(out) DFT bins of x·window.
func (b *bluestein) transform(out []complex64, x, window []float32, s [2][]complex64) {
	a, af := s[0], s[1]
	clear(a)
	for k, v := range x {
		c := complex(v*window[k], 0) // a_n = x; a_n *= window
		a[k] = cmul(c, b.chirp[k])
	}
	b.fft(af, a)
	for i := range af {
		af[i] = cmul(af[i], b.bFFT[i])
	}
	b.fft(a, af) // the inverse, scaled below
	// The reference divides every output by m; m is a power of two, so
	// multiplying by 1/m rounds the same, and only the outputs read here
	// need it.
	inv := 1 / float32(b.m)
	for i := range out {
		c := a[0]
		if i > 0 {
			c = a[b.m-i]
		}
		c = complex(float32(real(c)*inv), float32(imag(c)*inv))
		out[i] = cmul(c, b.chirp[i]) // the scale is 1 for a forward DFT
	}
}
