package vad

import (
	"fmt"
	"math"

	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/kernels/cpu/vmath"
)

// The streaming fast path. A chunk of one stream is about half a million
// multiply-adds over 1 MB of weights; run as a compiled program it pays
// for a dozen kernel dispatches, buffer binding and, for the convolutions
// and the LSTM, a GEMM driver built for large products (12-row tiles,
// packing, a thread team), which together cost several times the
// arithmetic. Here the same network is one fixed sequence of panel
// products (gemm.PanelB, run on the calling goroutine) on buffers laid out
// once per stream, so that no step copies or allocates:
//
//   - activations are time-major ([frame][channel]) with a zero frame
//     before and after, so the three taps of a convolution at one output
//     frame are one contiguous row of the buffer: the convolution is a
//     product of overlapping rows with the weight packed tap-major, with
//     no im2col;
//   - the STFT basis is the window times cos and sin, so its real rows are
//     even and its imaginary rows odd about the middle of the frame, and
//     bin N/2 − k is bin k times ±(−1)^n (both checked, bit for bit, when
//     the weights are packed): each frame is folded into x[n] + x[N−n]
//     and x[n] − x[N−n], each fold split by the parity of n, and four
//     products a quarter as wide as the spectrum give bins k and N/2 − k
//     as the sum and difference of their even-n and odd-n parts; they
//     read 66 KB of weights (the basis is 264 KB, half-folded 131 KB),
//     which brings the packed network to ~940 KB, under a 1 MiB L2;
//   - the encoder's output frame is written straight into the first half
//     of the LSTM's input row [x; h], whose second half is the carried h,
//     so the cell's two products are one;
//   - taps that only ever read padding (the short layers at the end of the
//     encoder) are left out of the packed weight.
//
// Several streams (a Batch) run every layer as one product over all their
// rows. The compiled program stays the reference: fast_test.go checks this
// path against it chunk by chunk.

// fastConv is one encoder layer packed for the fast path.
type fastConv struct {
	w                 *gemm.PanelB // [(taps)·cin, cout], tap-major rows
	bias              []float32
	cin, cout, stride int
	tOut, tapLo       int
	rowLen            int  // taps·cin: the A row of one output frame
	padIn, padOut     int  // floats per stream of the padded input and output buffers
	last              bool // the output is the LSTM's input x, not a padded buffer
}

// fastNet is a branch's weights packed for the fast path. It is immutable
// and shared by every stream of the model.
type fastNet struct {
	b      *branch
	frames int // STFT frames per chunk
	// The folded STFT, Q = N/4 (see packBasis and step): reE and reO map
	// the even part x[n] + x[N−n] at even n (Q + 1 values) and at odd n
	// (Q values) to Q columns k = 0 … Q−1; imE and imO map the odd part
	// x[n] − x[N−n] at even n (Q − 1) and odd n (Q) to Q columns
	// k = 1 … Q. mid holds the real bin Q's coefficients at even n (its
	// odd-n ones are zero).
	reE, reO, imE, imO *gemm.PanelB
	mid                []float32
	enc                [4]fastConv
	gates              *gemm.PanelB // [x; h] (2·Hidden) → i, f, g, o (4·Hidden)
	gateBias           []float32    // b_ih + b_hh
	decW               []float32
	decB               float32
}

// fastAvailable reports whether the fast path runs here: only where the
// engine computes on this CPU (a GPU engine keeps its programs) and the
// panel products have a SIMD kernel (elsewhere the compiled program's
// GEMMs are faster than the portable panel loop).
func fastAvailable(backend string) bool {
	return backend == "cpu" && gemm.PanelPath() != "go"
}

// newFastNet packs b's weights. It fails when the branch's geometry is not
// the one the fast path is laid out for (the last encoder layer must leave
// one frame).
func newFastNet(b *branch) (*fastNet, error) {
	n := &fastNet{b: b}
	total := b.context + b.chunk + b.pad
	n.frames = (total-b.filter)/b.hop + 1
	if err := n.packBasis(); err != nil {
		return nil, err
	}
	t := n.frames
	for i := range 4 {
		cv := &n.enc[i]
		blk := &b.encoder[i]
		cv.cin, cv.cout, cv.stride = blk.in, blk.out, blk.stride
		k := blk.ker
		const pad = 1
		cv.tOut = (t+2*pad-k)/cv.stride + 1
		// Taps that some output frame reads inside the input (padded row
		// t·stride + tap holds input frame t·stride + tap − 1).
		lo, hi := k, -1
		for o := range cv.tOut {
			for tap := range k {
				if in := o*cv.stride + tap - pad; in >= 0 && in < t {
					lo, hi = min(lo, tap), max(hi, tap)
				}
			}
		}
		if hi < lo {
			return nil, fmt.Errorf("vad: fast path: encoder %d reads only padding", i)
		}
		cv.tapLo, cv.rowLen = lo, (hi-lo+1)*cv.cin
		// w [cout, cin, k] → rows (tap − lo)·cin + ci, column co.
		wt := make([]float32, cv.cout*cv.rowLen)
		w := blk.w.Float32s()
		for co := range cv.cout {
			for tap := lo; tap <= hi; tap++ {
				for ci := range cv.cin {
					wt[co*cv.rowLen+(tap-lo)*cv.cin+ci] = w[(co*cv.cin+ci)*k+tap]
				}
			}
		}
		cv.w = gemm.PackPanels(true, cv.rowLen, cv.cout, wt, cv.rowLen)
		cv.bias = blk.b.Float32s()
		cv.padIn = (t + 2) * cv.cin
		cv.padOut = (cv.tOut + 2) * cv.cout
		t = cv.tOut
	}
	if t != 1 || n.enc[3].cout != Hidden {
		return nil, fmt.Errorf("vad: fast path: the encoder leaves %d frames of %d features, want 1 of %d", t, n.enc[3].cout, Hidden)
	}
	n.enc[3].last = true
	// [W_ih | W_hh] as one [4H, 2H] matrix, so that [x; h] is one row.
	dec := &b.decoder
	wih, whh, bih, bhh := dec.wih.Float32s(), dec.whh.Float32s(), dec.bih.Float32s(), dec.bhh.Float32s()
	wg := make([]float32, 4*Hidden*2*Hidden)
	for j := range 4 * Hidden {
		copy(wg[j*2*Hidden:], wih[j*Hidden:(j+1)*Hidden])
		copy(wg[j*2*Hidden+Hidden:], whh[j*Hidden:(j+1)*Hidden])
	}
	n.gates = gemm.PackPanels(true, 2*Hidden, 4*Hidden, wg, 2*Hidden)
	n.gateBias = make([]float32, 4*Hidden)
	for j := range n.gateBias {
		n.gateBias[j] = bih[j] + bhh[j]
	}
	n.decW = dec.convW.Float32s()
	n.decB = dec.convB.Float32s()[0]
	return n, nil
}

// packBasis packs the STFT basis for folded frames, after checking the
// symmetries that the folding rests on, exactly: real row k at N − n
// equals row k at n, imaginary row k at N − n is minus row k at n, the
// imaginary rows of bins 0 and N/2 and the imaginary column n = 0, N/2
// are zero; real row N/2 − k is (−1)^n times real row k and imaginary
// row N/2 − k is −(−1)^n times imaginary row k (cos and sin of
// π·n − 2π·k·n/N).
func (n *fastNet) packBasis() error {
	b := n.b
	N, bins, basis := b.filter, b.bins, b.stft.basis.Float32s()
	if N%4 != 0 || bins != N/2+1 {
		return fmt.Errorf("vad: fast path: STFT of %d points with %d bins", N, bins)
	}
	half, q := N/2, N/4
	re := func(k, i int) float32 { return basis[k*N+i] }
	im := func(k, i int) float32 { return basis[(bins+k)*N+i] }
	for k := range bins {
		for i := 1; i < half; i++ {
			if re(k, N-i) != re(k, i) || im(k, N-i) != -im(k, i) {
				return fmt.Errorf("vad: fast path: STFT basis row %d is not symmetric at %d", k, i)
			}
		}
		if im(k, 0) != 0 || im(k, half) != 0 {
			return fmt.Errorf("vad: fast path: STFT basis: sin row %d is not 0 at 0 and N/2", k)
		}
		for i := range N {
			sign := float32(1 - 2*(i%2)) // (−1)^n
			if re(half-k, i) != sign*re(k, i) || im(half-k, i) != -sign*im(k, i) {
				return fmt.Errorf("vad: fast path: STFT basis: bins %d and %d are not mirrored at %d", k, half-k, i)
			}
		}
		if k == 0 || k == bins-1 {
			for i := range N {
				if im(k, i) != 0 {
					return fmt.Errorf("vad: fast path: STFT basis: sin row of bin %d is not zero", k)
				}
			}
		}
	}
	// pack lays out rows of the basis (one per input i0, i0+2, …, depth
	// of them) for the columns k0 … k0+q−1.
	pack := func(row func(k, i int) float32, i0, depth, k0 int) *gemm.PanelB {
		w := make([]float32, depth*q)
		for d := range depth {
			for k := range q {
				w[d*q+k] = row(k0+k, i0+2*d)
			}
		}
		return gemm.PackPanels(false, depth, q, w, q)
	}
	n.reE = pack(re, 0, q+1, 0)
	n.reO = pack(re, 1, q, 0)
	n.imE = pack(im, 2, q-1, 1)
	n.imO = pack(im, 1, q, 1)
	n.mid = make([]float32, q+1)
	for d := range n.mid {
		n.mid[d] = re(q, 2*d)
	}
	return nil
}

// fastStreams is the working memory of n streams on the fast path: each
// stream's padded input, spectrum, padded activations, LSTM row [x; h] and
// cell state, and the row slices every product reads and writes, all laid
// out once. It is what a Detector (n = 1) or a Batch holds.
type fastStreams struct {
	net *fastNet
	n   int

	xp   []float32    // per stream: context, chunk, reflect padding
	fold []float32    // per stream and frame: the parts of the folded frame, N values
	spec []float32    // per stream and frame: the four folded products, N values
	act  [4][]float32 // act[i]: encoder i's padded input, per stream
	xh   []float32    // per stream: [x; h], 2·Hidden
	c    []float32    // per stream: cell state, Hidden
	tmp  []float32    // per stream: tanh(c)

	// The folded frames by part (see step) and the products' rows.
	foldRows, specRows [4][]([]float32)
	encA, encC         [4][]([]float32)
	xhRows, gateRows   []([]float32)
	gates              []float32 // per stream: 4·Hidden
}

func newFastStreams(net *fastNet, n int) *fastStreams {
	b := net.b
	s := &fastStreams{net: net, n: n}
	in := b.context + b.chunk + b.pad
	s.xp = make([]float32, n*in)
	N, q := b.filter, b.filter/4
	s.fold = make([]float32, n*net.frames*N)
	s.spec = make([]float32, n*net.frames*N)
	for i := range 4 {
		s.act[i] = make([]float32, n*net.enc[i].padIn)
	}
	s.xh = make([]float32, n*2*Hidden)
	s.c = make([]float32, n*Hidden)
	s.tmp = make([]float32, n*Hidden)
	s.gates = make([]float32, n*4*Hidden)
	for st := range n {
		for f := range net.frames {
			fold := s.fold[(st*net.frames+f)*N : (st*net.frames+f+1)*N]
			// even part at even n (q+1), at odd n (q); odd part at even
			// n (q−1), at odd n (q)
			for p, r := range [4][2]int{{0, q + 1}, {q + 1, 2*q + 1}, {2*q + 1, 3 * q}, {3 * q, 4 * q}} {
				s.foldRows[p] = append(s.foldRows[p], fold[r[0]:r[1]])
			}
			spec := s.spec[(st*net.frames+f)*N : (st*net.frames+f+1)*N]
			for p := range 4 {
				s.specRows[p] = append(s.specRows[p], spec[p*q:(p+1)*q])
			}
		}
		for i := range 4 {
			cv := &net.enc[i]
			src := s.act[i][st*cv.padIn : (st+1)*cv.padIn]
			for o := range cv.tOut {
				off := (o*cv.stride + cv.tapLo) * cv.cin
				s.encA[i] = append(s.encA[i], src[off:off+cv.rowLen])
				var dst []float32
				if cv.last {
					dst = s.xh[st*2*Hidden : st*2*Hidden+Hidden]
				} else {
					next := s.act[i+1][st*cv.padOut : (st+1)*cv.padOut]
					dst = next[(o+1)*cv.cout : (o+2)*cv.cout] // after the zero frame
				}
				s.encC[i] = append(s.encC[i], dst)
			}
		}
		s.xhRows = append(s.xhRows, s.xh[st*2*Hidden:(st+1)*2*Hidden])
		s.gateRows = append(s.gateRows, s.gates[st*4*Hidden:(st+1)*4*Hidden])
	}
	return s
}

// reset starts every stream anew: zero context, h and c.
func (s *fastStreams) reset() {
	clear(s.xp)
	clear(s.xh)
	clear(s.c)
}

// input returns stream st's slot for its next chunk.
func (s *fastStreams) input(st int) []float32 {
	b := s.net.b
	in := b.context + b.chunk + b.pad
	return s.xp[st*in+b.context : st*in+b.context+b.chunk]
}

// step scores the chunks written through input: every layer is one
// product over all streams' rows. Stream i's probability goes to dst[i].
func (s *fastStreams) step(dst []float32) {
	net, b := s.net, s.net.b
	in := b.context + b.chunk + b.pad
	n := b.context + b.chunk
	N, half, q, bins := b.filter, b.filter/2, b.filter/4, b.bins
	for st := range s.n {
		x := s.xp[st*in : (st+1)*in]
		for i := range b.pad { // reflect, the edge sample not repeated
			x[n+i] = x[n-2-i]
		}
		for f := range net.frames {
			fr := x[f*b.hop : f*b.hop+N]
			fold := s.fold[(st*net.frames+f)*N : (st*net.frames+f+1)*N]
			ee, eo, oe, oo := fold[:q+1], fold[q+1:2*q+1], fold[2*q+1:3*q], fold[3*q:]
			ee[0], ee[q] = fr[0], fr[half]
			for d := 1; d < q; d++ {
				i, j := 2*d, 2*d-1 // even and odd n
				ee[d] = fr[i] + fr[N-i]
				oe[d-1] = fr[i] - fr[N-i]
				eo[d-1] = fr[j] + fr[N-j]
				oo[d-1] = fr[j] - fr[N-j]
			}
			j := half - 1
			eo[q-1] = fr[j] + fr[N-j]
			oo[q-1] = fr[j] - fr[N-j]
		}
	}
	// STFT: the folded frames times the quarters of the basis.
	for _, rows := range s.specRows {
		for _, r := range rows {
			clear(r)
		}
	}
	net.reE.MulAdd(s.specRows[0], s.foldRows[0])
	net.reO.MulAdd(s.specRows[1], s.foldRows[1])
	net.imE.MulAdd(s.specRows[2], s.foldRows[2])
	net.imO.MulAdd(s.specRows[3], s.foldRows[3])
	cin0 := net.enc[0].cin
	mag := func(re, im float32) float32 {
		return float32(math.Sqrt(float64(re*re + im*im)))
	}
	for st := range s.n {
		a := s.act[0][st*net.enc[0].padIn:]
		for f := range net.frames {
			sp := s.spec[(st*net.frames+f)*N : (st*net.frames+f+1)*N]
			re0, re1, im0, im1 := sp[:q], sp[q:2*q], sp[2*q:3*q], sp[3*q:]
			out := a[(f+1)*cin0 : (f+1)*cin0+bins]
			// bins k and N/2 − k: re = E ± O, im = E + O and O − E (the
			// imaginary products' column k−1 is bin k).
			out[0] = mag(re0[0]+re1[0], 0)
			out[half] = mag(re0[0]-re1[0], 0)
			for k := 1; k < q; k++ {
				out[k] = mag(re0[k]+re1[k], im0[k-1]+im1[k-1])
				out[half-k] = mag(re0[k]-re1[k], im1[k-1]-im0[k-1])
			}
			var y float32
			for d, v := range s.fold[(st*net.frames+f)*N : (st*net.frames+f)*N+q+1] {
				y += v * net.mid[d]
			}
			out[q] = mag(y, im0[q-1]+im1[q-1])
		}
	}
	// Encoder: bias, product and ReLU, into the next layer's padded input.
	for i := range 4 {
		cv := &net.enc[i]
		for _, c := range s.encC[i] {
			copy(c, cv.bias)
		}
		cv.w.MulAddReLU(s.encC[i], s.encA[i])
	}
	// LSTM cell: gates = b + [W_ih | W_hh]·[x; h], PyTorch order i, f, g, o.
	for _, g := range s.gateRows {
		copy(g, net.gateBias)
	}
	net.gates.MulAdd(s.gateRows, s.xhRows)
	const H = Hidden
	for st := range s.n {
		g := s.gates[st*4*H : (st+1)*4*H]
		vmath.Sigmoid(g[:2*H], g[:2*H])
		vmath.Tanh(g[2*H:3*H], g[2*H:3*H])
		vmath.Sigmoid(g[3*H:], g[3*H:])
		c := s.c[st*H : (st+1)*H]
		ig, fg, gg := g[:H], g[H:2*H], g[2*H:3*H]
		for j := range c {
			c[j] = fg[j]*c[j] + ig[j]*gg[j]
		}
		tc := s.tmp[st*H : (st+1)*H]
		vmath.Tanh(tc, c)
		// h goes where the next step reads it: the second half of [x; h].
		h := s.xh[st*2*H+H : (st+1)*2*H]
		og := g[3*H:]
		var y float32
		for j := range h {
			h[j] = og[j] * tc[j]
			y += max(h[j], 0) * net.decW[j]
		}
		dst[st] = vmath.Sigmoid32(y + net.decB)
	}
	// Each stream's next context is the end of this chunk.
	for st := range s.n {
		x := s.xp[st*in : (st+1)*in]
		copy(x[:b.context], x[n-b.context:n])
	}
}
