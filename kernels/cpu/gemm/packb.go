package gemm

import "fmt"

// PackedB is a constant B operand (a weight) packed once into the Go
// GEMM's B slivers, so that products with it skip the per-call packing,
// which for a weight read by a few rows of activations (a text encoder's
// tokens) costs about as much as the arithmetic. It is immutable and may be
// shared by concurrent calls; it keeps a reference to the original matrix
// for vector products, which read it in place.
type PackedB struct {
	kern    *sgemmKernel
	k, n    int
	kc      int // depth block, as the blocked driver splits k
	slivers int // ceil(n/nr)
	data    []float32

	orig   []float32
	ldb    int
	transB bool
}

// Bytes returns the packed size, for memory accounting.
func (p *PackedB) Bytes() int { return 4 * len(p.data) }

// PackB packs op(B) (k×n; b stored k×n, or n×k when transB) for
// [Engine.SGEMMPackedB]. b must not change while the packing is in use.
func (e *Engine) PackB(transB bool, k, n int, b []float32, ldb int) *PackedB {
	if k <= 0 || n <= 0 {
		panic(fmt.Sprintf("gemm: PackB: %d×%d matrix", k, n))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkLD("b", bc, ldb)
	checkLen("b", br, bc, len(b), ldb)
	p, words := e.packBLayout(transB, k, n, b, ldb)
	p.data = make([]float32, words)
	nr := p.kern.nr
	for pc := 0; pc < k; pc += p.kc {
		depth := min(p.kc, k-pc)
		blk := p.block(pc)
		for s := 0; s < p.slivers; s++ {
			c0 := s * nr
			packPanel(blk[s*nr*depth:(s+1)*nr*depth], nr, min(nr, n-c0), depth, b, ldb, c0, pc, !transB)
		}
	}
	return p
}

// packBLayout is PackB's packing of b without its words (the count
// returned): what PackB fills and PackedBFrom maps.
func (e *Engine) packBLayout(transB bool, k, n int, b []float32, ldb int) (*PackedB, int) {
	kern := e.kern
	p := &PackedB{kern: kern, k: k, n: n, slivers: ceilDiv(n, kern.nr), orig: b, ldb: ldb, transB: transB}
	p.kc = ceilDiv(k, ceilDiv(k, kern.kc))
	return p, p.slivers * kern.nr * k
}

// block returns the slivers of the depth block starting at pc.
func (p *PackedB) block(pc int) []float32 { return p.data[pc*p.slivers*p.kern.nr:] }

// SGEMMPackedB computes C = op(A)·B (m×n, row stride ldc) with B packed by
// PackB: the same result as SGEMM with alpha 1 and beta 0. It always runs
// the Go GEMM, whatever the engine's path.
func (e *Engine) SGEMMPackedB(transA bool, m int, a []float32, lda int, p *PackedB, c []float32, ldc int) {
	if p.kern != e.kern {
		panic("gemm: SGEMMPackedB: B packed for another engine's kernel")
	}
	checkSGEMM(transA, p.transB, m, p.n, p.k, a, lda, p.orig, p.ldb, c, ldc)
	if m == 0 {
		return
	}
	if m == 1 || p.n == 1 {
		e.gemv(transA, p.transB, m, p.n, p.k, 1, a, lda, p.orig, p.ldb, 0, c, ldc, e.threads)
		return
	}
	e.blocked(transA, p.transB, m, p.n, p.k, 1, a, lda, nil, 0, p, quantB{}, 0, c, ldc, e.threads)
}
