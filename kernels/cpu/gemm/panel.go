package gemm

import "fmt"

// PanelWidth is the number of output columns one panel of a [PanelB] holds:
// four AVX-512 vectors, so that a row of A times one panel keeps its sums in
// registers for the whole depth.
const PanelWidth = 64

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
// is read once per four rows, and the sums stay in registers over the whole
// depth, with AVX-512 where the CPU has it ([PanelPath]); it allocates
// nothing.
func (p *PanelB) MulAdd(c, a [][]float32) {
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
		p.rows4(c[i:i+4:i+4], a[i:i+4:i+4])
	}
	switch m - i {
	case 1:
		p.row1(c[i], a[i])
	case 2, 3:
		// Two or three rows still read each panel once: the four-row
		// kernel runs with the last row repeated, which loads and stores
		// the same sums twice.
		var ar, cr [4][]float32
		for r := range 4 {
			ar[r], cr[r] = a[min(i+r, m-1)], c[min(i+r, m-1)]
		}
		p.rows4(cr[:], ar[:])
	}
}

// rows4 runs four rows over every panel.
func (p *PanelB) rows4(c, a [][]float32) {
	for s := range p.panels {
		j0 := s * PanelWidth
		w := min(PanelWidth, p.n-j0)
		b := p.data[s*p.k*PanelWidth : (s+1)*p.k*PanelWidth]
		if w == PanelWidth {
			panel4(p.k, b, a, c[0][j0:j0+w], c[1][j0:j0+w], c[2][j0:j0+w], c[3][j0:j0+w])
			continue
		}
		// A narrow tail panel goes through a full-width tile: the padded
		// columns of B are zero, and only w columns are written back.
		var t [4][PanelWidth]float32
		for r := range 4 {
			copy(t[r][:w], c[r][j0:j0+w])
		}
		panel4(p.k, b, a, t[0][:], t[1][:], t[2][:], t[3][:])
		for r := range 4 {
			copy(c[r][j0:j0+w], t[r][:w])
		}
	}
}

// row1 runs one row over every panel.
func (p *PanelB) row1(c, a []float32) {
	for s := range p.panels {
		j0 := s * PanelWidth
		w := min(PanelWidth, p.n-j0)
		b := p.data[s*p.k*PanelWidth : (s+1)*p.k*PanelWidth]
		if w == PanelWidth {
			panel1(p.k, b, a, c[j0:j0+w])
			continue
		}
		var t [PanelWidth]float32
		copy(t[:w], c[j0:j0+w])
		panel1(p.k, b, a, t[:])
		copy(c[j0:j0+w], t[:w])
	}
}

// panel4Go is the portable form of panel4: c_r[j] += Σ_p a[r][p]·b[p·64+j]
// for four rows, each c_r one full panel wide.
func panel4Go(k int, b []float32, a [][]float32, c0, c1, c2, c3 []float32) {
	for r, c := range [4][]float32{c0, c1, c2, c3} {
		panel1Go(k, b, a[r], c)
	}
}

// panel1Go is the portable form of panel1, in blocks of four columns that
// the compiler keeps in registers.
func panel1Go(k int, b, a, c []float32) {
	a = a[:k]
	c = c[:PanelWidth]
	for j := 0; j < PanelWidth; j += 4 {
		s0, s1, s2, s3 := c[j], c[j+1], c[j+2], c[j+3]
		for d, v := range a {
			bp := b[d*PanelWidth+j : d*PanelWidth+j+4 : d*PanelWidth+j+4]
			s0 += v * bp[0]
			s1 += v * bp[1]
			s2 += v * bp[2]
			s3 += v * bp[3]
		}
		c[j], c[j+1], c[j+2], c[j+3] = s0, s1, s2, s3
	}
}
