package gemm

// The Go GEMM follows the BLIS loop nest, written for row-major C:
//
//	for ic over blocks of mc rows of A         (packed A block: outer cache)
//	  for pc over blocks of kc of the depth
//	    pack A[ic:+mc, pc:+kc] into mr-row micro-panels, in parallel
//	    for each task = (column block of ≤ nc columns, range of micro-panels)
//	      pack B[pc:+kc, block] into nr-column slivers  (private: L2)
//	      for ir over the task's A micro-panels         (L1)
//	        for jr over the B slivers                   (streamed from L2)
//	          microkernel: C[ir-tile, jr-tile] += A panel · B sliver
//
// Column blocks are split so that every worker gets a task even when n is
// small, and row ranges are split when there are still too few. The first
// depth block applies the caller's beta; later ones accumulate (beta = 1).

const (
	phasePackA = iota
	phaseCompute
	phaseBatch
	phaseGemv
	phaseShort
)

// minFlopsPerWorker keeps small products on one goroutine: below about 2
// MFLOP per worker, waking another goroutine costs more than it saves.
const minFlopsPerWorker = 1 << 21

// sgemmJob carries one call's arguments and scratch to the worker goroutines.
// Jobs live in their engine's pool, so the packing buffers are reused and a
// steady-state call allocates nothing.
type sgemmJob struct {
	kern  *sgemmKernel
	e     *Engine
	team  team
	phase int

	transA, transB bool
	m, n, k        int
	a, b, c        []float32
	lda, ldb, ldc  int
	alpha          float32

	// The block being computed.
	ic, rows, pc, depth int
	beta                float32
	panels              int // A micro-panels in the block
	colBlock, colTasks  int
	panelsPerTask       int

	// Batched calls (phaseBatch).
	strideA, strideB, strideC int
	betaBatch                 float32

	gv         gemvArgs  // phaseGemv
	vbuf, obuf []float32 // gemv: gathered strided vector, strided output

	pb     *PackedB    // B packed beforehand (PackB), or nil
	bq     quantB      // B as bytes, dequantized as it is packed (SGEMMQ8), when bq.q != nil
	apack  []float32   // shared packed A block
	ashort []float32   // short products: all of A, packed
	bpack  [][]float32 // per worker slot: packed B block
	tile   [][]float32 // per worker slot: mr×nr edge tile
}

func newSGEMMJob(e *Engine) *sgemmJob {
	k := e.kern
	j := &sgemmJob{
		kern:  k,
		e:     e,
		bpack: make([][]float32, e.threads),
		tile:  make([][]float32, e.threads),
	}
	j.team.init(j.task)
	return j
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// workersFor sizes the parallelism of one product.
func workersFor(m, n, k, threads int) int {
	flops := 2 * m * n * k
	return max(1, min(threads, flops/minFlopsPerWorker))
}

func (e *Engine) goSGEMM(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, threads int) {
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	if m == 1 || n == 1 {
		e.gemv(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
		return
	}
	e.blocked(transA, transB, m, n, k, alpha, a, lda, b, ldb, nil, quantB{}, beta, c, ldc, threads)
}

// blocked runs the loop nest above; pb, when not nil, is B already packed,
// and bq, when it holds bytes, is B as bytes (op(B) = bqᵀ), packed as it
// is dequantized (b is read in neither case).
func (e *Engine) blocked(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, pb *PackedB, bq quantB, beta float32, c []float32, ldc int, threads int) {
	workers := workersFor(m, n, k, threads)
	j := e.jobs.Get().(*sgemmJob)
	j.pb, j.bq = pb, bq
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.a, j.b, j.c = a, b, c
	j.lda, j.ldb, j.ldc = lda, ldb, ldc
	j.alpha = alpha

	kern := j.kern
	depthBlock := ceilDiv(k, ceilDiv(k, kern.kc))
	if (pb != nil || bq.q != nil) && m <= shortRows*kern.mr {
		j.short(depthBlock, beta, workers)
		j.a, j.b, j.c, j.pb, j.bq = nil, nil, nil, nil, quantB{}
		e.jobs.Put(j)
		return
	}
	rowBlock := roundUp(ceilDiv(m, ceilDiv(m, kern.mc)), kern.mr)
	// The packed A block is as large as this product's block, not the
	// largest one (mc×kc, 2.9 MB with the AVX-512 kernel): the pool holds
	// a job per concurrent caller, and the attention's per-head products
	// (depth 64) need a fraction of it.
	if need := rowBlock * depthBlock; cap(j.apack) < need {
		j.apack = make([]float32, need)
	}
	for ic := 0; ic < m; ic += rowBlock {
		for pc := 0; pc < k; pc += depthBlock {
			bEff := float32(1)
			if pc == 0 {
				bEff = beta
			}
			j.block(ic, min(rowBlock, m-ic), pc, min(depthBlock, k-pc), bEff, workers)
		}
	}
	j.a, j.b, j.c, j.pb, j.bq = nil, nil, nil, nil, quantB{} // do not pin the caller's memory in the pool
	e.jobs.Put(j)
}

// splitTasks divides a product's n columns and panels of A between
// workers: column blocks of at most nc (rounded to the microkernel's nr),
// as many as a multiple of the workers when there are several, and the
// panels split into rowTasks runs of perTask only where the column blocks
// alone would leave workers idle.
func splitTasks(n, nc, nr, panels, workers int) (colBlock, colTasks, perTask, rowTasks int) {
	colTasks = ceilDiv(n, nc)
	if workers > 1 {
		colTasks = roundUp(colTasks, workers)
	}
	colBlock = roundUp(ceilDiv(n, colTasks), nr)
	colTasks = ceilDiv(n, colBlock)
	rowTasks = 1
	if colTasks < workers {
		rowTasks = min(panels, ceilDiv(workers, colTasks))
	}
	perTask = ceilDiv(panels, rowTasks)
	rowTasks = ceilDiv(panels, perTask)
	return colBlock, colTasks, perTask, rowTasks
}

// block computes C[ic:+rows, :] (+)= alpha·A[ic:+rows, pc:+depth]·B[pc:+depth, :].
func (j *sgemmJob) block(ic, rows, pc, depth int, beta float32, workers int) {
	kern := j.kern
	j.ic, j.rows, j.pc, j.depth, j.beta = ic, rows, pc, depth, beta
	j.panels = ceilDiv(rows, kern.mr)

	var rowTasks int
	j.colBlock, j.colTasks, j.panelsPerTask, rowTasks = splitTasks(j.n, kern.nc, kern.nr, j.panels, workers)

	j.phase = phasePackA
	j.team.parallel(j.panels, workers)
	j.phase = phaseCompute
	j.team.parallel(j.colTasks*rowTasks, workers)
}

func (j *sgemmJob) task(t, slot int) {
	switch j.phase {
	case phasePackA:
		j.packAPanel(t)
	case phaseCompute:
		j.compute(t, slot)
	case phaseBatch:
		j.batchItem(t)
	case phaseGemv:
		j.gv.task(t)
	case phaseShort:
		j.shortTask(t, slot)
	}
}

// shortRows is the most A micro-panels a product with a packed B runs in
// one parallel phase (see short): 192 rows with the AVX-512 kernel, a
// sentence of Kokoro's ALBERT, whose products took four phases each in the
// blocked loop (two depth blocks, each packing A and then computing); its
// text stage on the 190-token benchmark sentence 206 → 197 ms (2 cores,
// quiet; 6 panels before). The sums are the same either way.
const shortRows = 16

// short computes a product of a few rows of A by a packed B (a text
// encoder's tokens by a weight), or by a byte B that each task packs for
// its columns (SGEMMQ8: Whisper's shortest windows), in one parallel
// phase: A, small, is packed whole first, and each task runs every depth
// block of its columns. Such products are bound by streaming the weight;
// the blocked loop's two barriers per depth block cost more than their
// arithmetic.
func (j *sgemmJob) short(depthBlock int, beta float32, workers int) {
	kern := j.kern
	mr := kern.mr
	j.panels = ceilDiv(j.m, mr)
	need := j.panels * mr * j.k
	if cap(j.ashort) < need {
		j.ashort = make([]float32, need)
	}
	j.ashort = j.ashort[:need]
	for pc := 0; pc < j.k; pc += depthBlock {
		depth := min(depthBlock, j.k-pc)
		blk := j.ashort[pc*j.panels*mr:]
		for ir := 0; ir < j.panels; ir++ {
			packPanel(blk[ir*mr*depth:(ir+1)*mr*depth], mr, min(mr, j.m-ir*mr), depth, j.a, j.lda, ir*mr, pc, j.transA)
		}
	}
	j.depth, j.beta = depthBlock, beta // depth: the blocks' size
	j.colTasks = ceilDiv(j.n, kern.nc)
	if workers > 1 {
		j.colTasks = roundUp(j.colTasks, workers)
	}
	j.colBlock = roundUp(ceilDiv(j.n, j.colTasks), kern.nr)
	j.colTasks = ceilDiv(j.n, j.colBlock)
	j.phase = phaseShort
	j.team.parallel(j.colTasks, workers)
}

// shortTask runs columns [t·colBlock, …) of a short product over the
// whole depth.
func (j *sgemmJob) shortTask(t, slot int) {
	kern := j.kern
	mr, nr := kern.mr, kern.nr
	j0 := t * j.colBlock
	j1 := min(j.n, j0+j.colBlock)
	if j.tile[slot] == nil {
		j.tile[slot] = make([]float32, mr*nr)
	}
	tile := j.tile[slot]
	c, ldc, alpha := j.c, j.ldc, j.alpha
	for pc := 0; pc < j.k; pc += j.depth {
		depth := min(j.depth, j.k-pc)
		beta := float32(1)
		if pc == 0 {
			beta = j.beta
		}
		ablk := j.ashort[pc*j.panels*mr:]
		var bblk []float32
		if j.bq.q != nil {
			// Bytes: this task's slivers of the depth block, packed here.
			if need := depth * roundUp(j1-j0, nr); cap(j.bpack[slot]) < need {
				j.bpack[slot] = make([]float32, need)
			}
			bblk = j.bpack[slot]
			for c0 := j0; c0 < j1; c0 += nr {
				o := (c0 - j0) * depth
				j.bq.packSliver(bblk[o:o+nr*depth], nr, min(nr, j1-c0), depth, c0, pc)
			}
		} else {
			bblk = j.pb.block(pc)[j0*depth:]
		}
		for ir := 0; ir < j.panels; ir++ {
			ap := ablk[ir*mr*depth:]
			i := ir * mr
			rows := min(mr, j.m-i)
			for jj := j0; jj < j1; jj += nr {
				cols := min(nr, j1-jj)
				bs := bblk[(jj-j0)*depth:]
				if rows == mr && cols == nr {
					kern.fn(depth, &ap[0], &bs[0], &c[i*ldc+jj], ldc, alpha, beta)
					continue
				}
				kern.fn(depth, &ap[0], &bs[0], &tile[0], nr, 1, 0)
				for r := 0; r < rows; r++ {
					dst := c[(i+r)*ldc+jj : (i+r)*ldc+jj+cols]
					src := tile[r*nr : r*nr+cols]
					if beta == 0 {
						for x, v := range src {
							dst[x] = alpha * v
						}
					} else {
						for x, v := range src {
							dst[x] = alpha*v + beta*dst[x]
						}
					}
				}
			}
		}
	}
}

// packAPanel packs micro-panel t of the current A block: mr values of
// op(A)[rows, p] for each p, zero past the last row.
func (j *sgemmJob) packAPanel(t int) {
	mr, depth := j.kern.mr, j.depth
	i0 := j.ic + t*mr
	rows := min(mr, j.ic+j.rows-i0)
	dst := j.apack[t*mr*depth : (t+1)*mr*depth]
	packPanel(dst, mr, rows, depth, j.a, j.lda, i0, j.pc, j.transA)
}

// packPanel writes dst[p*w+r] = op(X)[r0+r, p0+p] for r < rows, p < depth,
// and zeros for rows ≤ r < w. op(X)[r, p] is x[r*ld+p], or x[p*ld+r] when
// trans: the same routine packs A panels (rows of op(A)) and B slivers
// (columns of op(B), i.e. rows of op(B)ᵀ, so trans is inverted for B).
func packPanel(dst []float32, w, rows, depth int, x []float32, ld, r0, p0 int, trans bool) {
	if trans {
		if rows == w && w == 32 {
			// The common B sliver: fixed-size copies compile to vector moves
			// instead of a memmove call per row.
			for p := 0; p < depth; p++ {
				*(*[32]float32)(dst[p*32:]) = *(*[32]float32)(x[(p0+p)*ld+r0:])
			}
			return
		}
		for p := 0; p < depth; p++ {
			src := x[(p0+p)*ld+r0 : (p0+p)*ld+r0+rows]
			d := dst[p*w : p*w+w]
			copy(d, src)
			clear(d[rows:])
		}
		return
	}
	// Whole blocks of 16 along the depth go through the SIMD transpose
	// where there is one; the rest four rows at a time (one bounds check per
	// four stores, four load streams).
	done := packRowsFast(dst, w, rows, depth, x, ld, r0, p0)
	r := 0
	for ; r+4 <= rows; r += 4 {
		s0 := x[(r0+r)*ld+p0+done : (r0+r)*ld+p0+depth]
		s1 := x[(r0+r+1)*ld+p0+done:][:len(s0)]
		s2 := x[(r0+r+2)*ld+p0+done:][:len(s0)]
		s3 := x[(r0+r+3)*ld+p0+done:][:len(s0)]
		for p := range s0 {
			o := (done+p)*w + r
			d := dst[o : o+4 : o+4]
			d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
		}
	}
	for ; r < rows; r++ {
		src := x[(r0+r)*ld+p0+done : (r0+r)*ld+p0+depth]
		for p, v := range src {
			dst[(done+p)*w+r] = v
		}
	}
	if rows < w {
		for p := done; p < depth; p++ {
			clear(dst[p*w+rows : p*w+w])
		}
	}
}

// compute runs task t: pack one column block of B, then multiply it with a
// range of the packed A micro-panels.
func (j *sgemmJob) compute(t, slot int) {
	kern := j.kern
	mr, nr, depth := kern.mr, kern.nr, j.depth
	col, rowTask := t%j.colTasks, t/j.colTasks
	j0 := col * j.colBlock
	j1 := min(j.n, j0+j.colBlock)
	p0 := rowTask * j.panelsPerTask
	p1 := min(j.panels, p0+j.panelsPerTask)

	if need := depth * roundUp(j.colBlock, nr); cap(j.bpack[slot]) < need {
		j.bpack[slot] = make([]float32, need) // this product's block, as apack
	}
	if j.tile[slot] == nil {
		j.tile[slot] = make([]float32, mr*nr)
	}
	bp, tile := j.bpack[slot], j.tile[slot]
	slivers := ceilDiv(j1-j0, nr)
	switch {
	case j.pb != nil:
		bp = j.pb.block(j.pc)[j0*depth:]
	case j.bq.q != nil:
		for s := 0; s < slivers; s++ {
			c0 := j0 + s*nr
			j.bq.packSliver(bp[s*nr*depth:(s+1)*nr*depth], nr, min(nr, j1-c0), depth, c0, j.pc)
		}
	default:
		for s := 0; s < slivers; s++ {
			c0 := j0 + s*nr
			packPanel(bp[s*nr*depth:(s+1)*nr*depth], nr, min(nr, j1-c0), depth, j.b, j.ldb, c0, j.pc, !j.transB)
		}
	}

	c, ldc, alpha, beta := j.c, j.ldc, j.alpha, j.beta
	for ir := p0; ir < p1; ir++ {
		ap := j.apack[ir*mr*depth:]
		i := j.ic + ir*mr
		rows := min(mr, j.ic+j.rows-i)
		for s := 0; s < slivers; s++ {
			jj := j0 + s*nr
			cols := min(nr, j1-jj)
			bs := bp[s*nr*depth:]
			if rows == mr && cols == nr {
				kern.fn(depth, &ap[0], &bs[0], &c[i*ldc+jj], ldc, alpha, beta)
				continue
			}
			kern.fn(depth, &ap[0], &bs[0], &tile[0], nr, 1, 0)
			for r := 0; r < rows; r++ {
				dst := c[(i+r)*ldc+jj : (i+r)*ldc+jj+cols]
				src := tile[r*nr : r*nr+cols]
				if beta == 0 {
					for x, v := range src {
						dst[x] = alpha * v
					}
				} else {
					for x, v := range src {
						dst[x] = alpha*v + beta*dst[x]
					}
				}
			}
		}
	}
}

// scaleC sets C = beta·C without reading C when beta == 0.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for x := range row {
			row[x] *= beta
		}
	}
}

// goStrided runs a batch of products. When each product is too small to keep
// all threads busy, whole products are spread over the threads instead.
func (e *Engine) goStrided(transA, transB bool, m, n, k int, alpha float32,
	a []float32, lda, strideA int, b []float32, ldb, strideB int,
	beta float32, c []float32, ldc, strideC int, batch int) {
	if e.threads == 1 || batch == 1 || workersFor(m, n, k, e.threads) == e.threads {
		for i := 0; i < batch; i++ {
			e.goSGEMM(transA, transB, m, n, k, alpha, a[i*strideA:], lda, b[i*strideB:], ldb, beta, c[i*strideC:], ldc, e.threads)
		}
		return
	}
	j := e.jobs.Get().(*sgemmJob)
	j.transA, j.transB = transA, transB
	j.m, j.n, j.k = m, n, k
	j.a, j.b, j.c = a, b, c
	j.lda, j.ldb, j.ldc = lda, ldb, ldc
	j.strideA, j.strideB, j.strideC = strideA, strideB, strideC
	j.alpha, j.betaBatch = alpha, beta
	j.phase = phaseBatch
	j.team.parallel(batch, e.threads)
	j.a, j.b, j.c = nil, nil, nil
	e.jobs.Put(j)
}

func (j *sgemmJob) batchItem(t int) {
	j.e.goSGEMM(j.transA, j.transB, j.m, j.n, j.k, j.alpha,
		j.a[t*j.strideA:], j.lda, j.b[t*j.strideB:], j.ldb,
		j.betaBatch, j.c[t*j.strideC:], j.ldc, 1)
}
