package gemm

// Products with one row or one column of C (a decoder step, the logits of one
// token) are memory-bound: packing would copy the whole weight matrix for a
// handful of flops. They run straight off the caller's memory in one of two
// forms, both over contiguous vectors:
//
//	dots:  out[j] = Σ_p M[j*ldm+p]·v[p]       (rows of M contiguous)
//	combo: out[j] = Σ_p v[p]·M[p*ldm+j]       (a combination of M's rows)
//
// and are split over the threads by ranges of out.

const (
	formDots = iota
	formCombo
)

// gemvChunk is the number of outputs per parallel task.
const gemvChunk = 128

// gemv handles m == 1 or n == 1 (k ≥ 1, alpha ≠ 0).
func (e *Engine) gemv(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, threads int) {
	j := e.jobs.Get().(*sgemmJob)
	var (
		form, cnt, ldm int
		mat, v         []float32
		vinc, cinc     int
	)
	if m == 1 {
		// Row 0 of op(A) times op(B): v = that row, out = C's row 0.
		v, vinc = a, 1
		if transA {
			vinc = lda
		}
		mat, ldm, cnt, cinc = b, ldb, n, 1
		form = formCombo
		if transB {
			form = formDots
		}
	} else {
		// op(A) times column 0 of op(B): v = that column, out = C's column 0.
		v, vinc = b, ldb
		if transB {
			vinc = 1
		}
		mat, ldm, cnt, cinc = a, lda, m, ldc
		form = formDots
		if transA {
			form = formCombo
		}
	}
	if vinc != 1 {
		j.vbuf = grow(j.vbuf, k)
		for p := range j.vbuf {
			j.vbuf[p] = v[p*vinc]
		}
		v = j.vbuf
	}
	out := c[:cnt]
	if cinc != 1 {
		j.obuf = grow(j.obuf, cnt)
		out = j.obuf
		if beta != 0 {
			for i := range out {
				out[i] = c[i*cinc]
			}
		}
	}
	j.gv = gemvArgs{form: form, k: k, cnt: cnt, mat: mat, ldm: ldm, v: v[:k], out: out, alpha: alpha, beta: beta}
	j.phase = phaseGemv
	j.team.parallel(ceilDiv(cnt, gemvChunk), workersFor(1, cnt, k, threads))
	if cinc != 1 {
		for i, x := range out {
			c[i*cinc] = x
		}
	}
	j.gv = gemvArgs{}
	j.vbuf = j.vbuf[:0]
	e.jobs.Put(j)
}

// gemvArgs is one gemv call, shared by its tasks.
type gemvArgs struct {
	form, k, cnt, ldm int
	mat, v, out       []float32
	alpha, beta       float32
}

// gemvTask computes outputs [t·gemvChunk, +gemvChunk).
func (g *gemvArgs) task(t int) {
	j0 := t * gemvChunk
	j1 := min(g.cnt, j0+gemvChunk)
	out := g.out[j0:j1]
	if g.form == formDots {
		// Eight rows at a time where a kernel sums each as dot does: the
		// same sums with more FMA chains in flight (an LSTM step's
		// h·W_hhᵀ is one of these, and its steps are sequential).
		var d [8]float32
		x := 0
		for ; x+8 <= len(out) && dotRows8(g.mat[(j0+x)*g.ldm:], g.ldm, g.v, &d); x += 8 {
			for r, v := range d {
				s := g.alpha * v
				if g.beta != 0 {
					s += g.beta * out[x+r]
				}
				out[x+r] = s
			}
		}
		for ; x < len(out); x++ {
			row := g.mat[(j0+x)*g.ldm:][:g.k]
			s := g.alpha * dot(row, g.v)
			if g.beta != 0 {
				s += g.beta * out[x]
			}
			out[x] = s
		}
		return
	}
	scaleC(1, len(out), g.beta, out, len(out))
	p := 0
	for ; p+8 <= len(g.v); p += 8 {
		var s [8]float32
		for r := range s {
			s[r] = g.alpha * g.v[p+r]
		}
		if !axpy8(&s, g.mat[p*g.ldm+j0:], g.ldm, out) {
			break
		}
	}
	for ; p < len(g.v); p++ {
		axpy(g.alpha*g.v[p], g.mat[p*g.ldm+j0:p*g.ldm+j1], out)
	}
}

// axpyGo computes y += s·x.
func axpyGo(s float32, x, y []float32) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += s * x[i]
		y[i+1] += s * x[i+1]
		y[i+2] += s * x[i+2]
		y[i+3] += s * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += s * x[i]
	}
}

// dotGo returns Σ x[i]·y[i] with four partial sums.
func dotGo(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}
