package gemm

import (
	"fmt"
	"unsafe"
)

// PanelWidth is the number of output columns one panel of a [PanelB] holds:
// four AVX-512 vectors, so that a row of A times one panel keeps its sums in
// registers over a depth block.
const PanelWidth = 64

// panelDepth is the depth block of the panel kernels: the products of each
// block of this many rows of B (the last one shorter) are summed from zero
// in registers and then added to C. A float32 sum's rounding
// grows with the magnitude of its running total, so one sequential sum
// over a convolution's 387 taps, started from the bias, strays several
// times further than blocked sums: on Silero VAD's fast path (models/vad)
// the worst probability over real clips and synthetic audio went from
// 9.1e-6 to 2.5e-6 off a float64 evaluation; a block costs one round
// trip of the C tile through L1.
const panelDepth = 64

// PanelB is a constant B operand (k×n) packed for products with a few rows
// of A computed on the calling goroutine: a streaming model step (a VAD
// chunk, an LSTM cell) multiplies a handful of activation rows by each
// weight, where the blocked driver's 12-row tiles, packing and team hand-off
// cost more than the arithmetic. Columns are cut into panels of PanelWidth,
// each stored depth-major ([k][PanelWidth], the tail panel zero-padded), so
// every step of the depth loop reads one contiguous 256-byte row. A PanelB
// is immutable and may be shared by concurrent calls.
type PanelB struct {
	k, n, panels int
	data         []float32
}

// PackPanels packs op(B) (k×n; b stored k×n, or n×k when transB, row stride
// ldb) for [PanelB.MulAdd].
func PackPanels(transB bool, k, n int, b []float32, ldb int) *PanelB {
	if k <= 0 || n <= 0 {
		panic(fmt.Sprintf("gemm: PackPanels: %d×%d matrix", k, n))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkLD("b", bc, ldb)
	checkLen("b", br, bc, len(b), ldb)
	p := &PanelB{k: k, n: n, panels: ceilDiv(n, PanelWidth)}
	p.data = make([]float32, p.panels*k*PanelWidth)
	for j := range n {
		dst := p.data[(j/PanelWidth)*k*PanelWidth+j%PanelWidth:]
		for d := range k {
			if transB {
				dst[d*PanelWidth] = b[j*ldb+d]
			} else {
				dst[d*PanelWidth] = b[d*ldb+j]
			}
		}
	}
	return p
}

// K returns the depth (rows of B).
func (p *PanelB) K() int { return p.k }

// N returns the number of columns of B.
func (p *PanelB) N() int { return p.n }

// Bytes returns the packed size, for memory accounting.
func (p *PanelB) Bytes() int { return 4 * len(p.data) }

// MulAdd adds a[i]·B to c[i] for every row i: c[i][j] += Σ_p a[i][p]·B[p][j]
// for j < N, p < K. Rows are separate slices so that a caller can point
// them anywhere without copying: at overlapping windows of one buffer (the
// taps of a convolution over time-major frames), or at the rows of many
// streams. Each a[i] must hold at least K values and each c[i] at least N;
// an output row must not overlap any input row, nor another output row
// unless it is the same row. Up to four rows run at a time, so every panel
// is read once per four rows, and the sums stay in registers over blocks of
// up to 64 of the depth, each added to C when it ends, with AVX-512 where
// the CPU has it ([PanelPath]); it allocates nothing.
func (p *PanelB) MulAdd(c, a [][]float32) { p.mulAdd(c, a, false) }

// MulAddReLU is MulAdd followed by c[i][j] = max(c[i][j], 0) on the
// columns it writes, applied to the last block's sums while they are
// still in registers (a convolution with its bias in c and a ReLU after
// it).
func (p *PanelB) MulAddReLU(c, a [][]float32) { p.mulAdd(c, a, true) }

func (p *PanelB) mulAdd(c, a [][]float32, relu bool) {
	if len(a) != len(c) {
		panic(fmt.Sprintf("gemm: PanelB.MulAdd: %d rows of A for %d rows of C", len(a), len(c)))
	}
	for i := range a {
		if len(a[i]) < p.k || len(c[i]) < p.n {
			panic(fmt.Sprintf("gemm: PanelB.MulAdd: row %d: A has %d values (want %d), C %d (want %d)", i, len(a[i]), p.k, len(c[i]), p.n))
		}
	}
	m := len(a)
	i := 0
	for ; i+4 <= m; i += 4 {
		p.rows(4, c[i:i+4:i+4], a[i:i+4:i+4], relu)
	}
	switch m - i {
	case 1, 2:
		p.rows(m-i, c[i:], a[i:], relu)
	case 3:
		// Three rows still read each panel once: the four-row kernel runs
		// with the last row repeated, which loads and stores the same sums
		// twice.
		ar := [4][]float32{a[i], a[i+1], a[i+2], a[i+2]}
		cr := [4][]float32{c[i], c[i+1], c[i+2], c[i+2]}
		p.rows(4, cr[:], ar[:], relu)
	}
}

// rows runs m = 1, 2 or 4 rows over every panel.
func (p *PanelB) rows(m int, c, a [][]float32, relu bool) {
	for s := range p.panels {
		var cp [4]*float32 // in the loop, so that the tile's address stays on the stack
		j0 := s * PanelWidth
		w := min(PanelWidth, p.n-j0)
		b := p.data[s*p.k*PanelWidth : (s+1)*p.k*PanelWidth]
		if w == PanelWidth {
			for r := range m {
				cp[r] = &c[r][j0]
			}
			panelRows(m, p.k, b, a, &cp, relu)
			continue
		}
		// A narrow tail panel goes through a full-width tile: the padded
		// columns of B are zero, and only w columns are written back.
		var t [4][PanelWidth]float32
		for r := range m {
			copy(t[r][:w], c[r][j0:j0+w])
			cp[r] = &t[r][0]
		}
		panelRows(m, p.k, b, a, &cp, relu)
		for r := range m {
			copy(c[r][j0:j0+w], t[r][:w])
		}
	}
}

// panelGo is the portable panel kernel: c_r[j] += Σ_p a[r][p]·b[p·64+j]
// for m rows, each c_r one full panel wide, in blocks of four columns that
// the compiler keeps in registers; as in the SIMD kernels, each depth
// block of panelDepth is summed from zero and then added to C. A block's sums are stored only after
// every row's are computed, as the assembly kernels do, because mulAdd
// runs three rows as four with the last one repeated (same A, same C): a
// row stored early would be read back by its twin and counted twice.
func panelGo(m, k int, b []float32, a [][]float32, c *[4]*float32, relu bool) {
	var cr [4][]float32
	for r := range m {
		cr[r] = unsafe.Slice(c[r], PanelWidth)
	}
	for j := 0; j < PanelWidth; j += 4 {
		var s [4][4]float32
		for r := range m {
			s0, s1, s2, s3 := cr[r][j], cr[r][j+1], cr[r][j+2], cr[r][j+3]
			for d0 := 0; d0 < k; d0 += panelDepth {
				var p0, p1, p2, p3 float32
				for d, v := range a[r][d0:min(d0+panelDepth, k)] {
					o := (d0+d)*PanelWidth + j
					bp := b[o : o+4 : o+4]
					p0 += v * bp[0]
					p1 += v * bp[1]
					p2 += v * bp[2]
					p3 += v * bp[3]
				}
				s0, s1, s2, s3 = s0+p0, s1+p1, s2+p2, s3+p3
			}
			if relu {
				s0, s1, s2, s3 = max(s0, 0), max(s1, 0), max(s2, 0), max(s3, 0)
			}
			s[r] = [4]float32{s0, s1, s2, s3}
		}
		for r := range m {
			copy(cr[r][j:j+4], s[r][:])
		}
	}
}
