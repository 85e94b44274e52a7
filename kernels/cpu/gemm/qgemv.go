package gemm

// Products with a weight quantized to one byte per element, activations in
// float32 (weight-only quantization):
//
//	C[i,j] = scale · Σ_p A[i,p]·(Q[j,p] − zq)
//
// Q is stored n×k, row j being output j's weights (the PyTorch [out, in]
// layout), as uint8 or int8. Each Q − zq is a small integer held exactly in
// float32, so the result is the product with the dequantized weight
// (Q − zq)·scale up to the order of the float32 sums. The point is memory:
// a decoder running one token at a time is bound by the bytes of weights it
// streams per step, and this reads a quarter of what the dequantized float32
// weight would take.

// qgemvRows is the number of weight rows one parallel task handles.
const qgemvRows = 64

// qgemvJob is one LinearQ8 call, shared by its tasks.
type qgemvJob struct {
	team    team
	m, n, k int
	a       []float32
	lda     int
	q       []byte
	ldq     int
	signed  bool
	zq      int32
	scale   float32
	c       []float32
	ldc     int
	dots    []float32 // per worker slot: one task's row dots
	slots   int
	// LinearQ8Int16: the rows of A on the 16-bit grid (row i's high bytes
	// at hl[2ik:], low bytes at hl[(2i+1)k:]), their zero-point lane
	// corrections and factors (see quantizeRows).
	int16  bool
	hl     []int8
	corr   []int32
	factor []float64
}

func newQGEMVJob(threads int) *qgemvJob {
	j := &qgemvJob{slots: max(threads, 1)}
	j.dots = make([]float32, j.slots*qgemvRows)
	j.team.init(j.task)
	return j
}

// LinearQ8 computes C = A·((Q − zq)·scale)ᵀ: A is m×k float32 with row
// stride lda, Q is n×k bytes (uint8, or int8 when signed) with row stride
// ldq, and C is m×n with row stride ldc. zq is the weight's zero point,
// scale its (per-tensor) scale. Work is split over the engine's threads by
// ranges of weight rows, each range read once for all m rows of A.
func (e *Engine) LinearQ8(m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, scale float32, c []float32, ldc int) {
	checkLinearQ8("LinearQ8", m, n, k, a, lda, q, ldq, signed, zq, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	j := e.qjobs.Get().(*qgemvJob)
	j.m, j.n, j.k = m, n, k
	j.a, j.lda, j.q, j.ldq, j.signed, j.zq, j.scale = a, lda, q, ldq, signed, zq, scale
	j.c, j.ldc = c, ldc
	j.team.parallel(ceilDiv(n, qgemvRows), min(j.slots, workersFor(m, n, k, e.threads)))
	j.a, j.q, j.c = nil, nil, nil
	e.qjobs.Put(j)
}

// task computes weight rows [t·qgemvRows, +qgemvRows) for every row of A.
func (j *qgemvJob) task(t, slot int) {
	if j.int16 {
		j.int16Task(t)
		return
	}
	r0 := t * qgemvRows
	r1 := min(j.n, r0+qgemvRows)
	q := j.q[r0*j.ldq:]
	dots := j.dots[slot*qgemvRows : slot*qgemvRows+r1-r0]
	for i := range j.m {
		a := j.a[i*j.lda : i*j.lda+j.k]
		dotsQ8(a, q, j.ldq, j.signed, j.zq, dots)
		out := j.c[i*j.ldc+r0 : i*j.ldc+r1]
		for x, d := range dots {
			out[x] = j.scale * d
		}
	}
}

// dotsQ8 sets out[r] = Σ_p a[p]·(q[r·ldq+p] − zq) for r < len(out).
func dotsQ8(a []float32, q []byte, ldq int, signed bool, zq int32, out []float32) {
	k := len(a)
	body := k &^ 31
	if body == 0 || !dotsQ8Fast(a[:body], q, ldq, signed, zq, out) {
		body = 0
		clear(out)
	}
	if body == k {
		return
	}
	for r := range out {
		row := q[r*ldq : r*ldq+k]
		s := out[r]
		for p := body; p < k; p++ {
			s += a[p] * float32(qval(row[p], signed)-zq)
		}
		out[r] = s
	}
}

// qval reads a stored byte as uint8 or int8.
func qval(b byte, signed bool) int32 {
	if signed {
		return int32(int8(b))
	}
	return int32(b)
}

// LinearQ8 runs [Engine.LinearQ8] on the [Default] engine.
func LinearQ8(m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, scale float32, c []float32, ldc int) {
	Default().LinearQ8(m, n, k, a, lda, q, ldq, signed, zq, scale, c, ldc)
}
