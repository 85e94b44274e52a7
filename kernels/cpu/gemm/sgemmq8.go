package gemm

// SGEMMQ8 computes C = A·((Q − zq)·scale)ᵀ, the product [Engine.LinearQ8]
// computes, for many rows of A: A is m×k float32 with row stride lda, Q is
// n×k bytes (uint8, or int8 when signed) with row stride ldq, C is m×n with
// row stride ldc. It runs the blocked Go GEMM with each B sliver
// dequantized from the bytes as it is packed, so a weight kept as bytes
// needs no float32 copy of itself (a packed weight costs four bytes per
// byte of the file it came from). A sliver holds the values Dequantize
// computes, (q − zq)·scale rounded once, so C equals, bit for bit, SGEMM
// (or SGEMMPackedB) on the dequantized weight. Packing B on every call
// costs k·n conversions against m·k·n products: for the encoder's products
// (50 to 1500 rows) a few per cent at the fewest rows; LinearQ8, which reads
// the weight once for all rows but runs them as dot products, is the one
// for a few rows.
func (e *Engine) SGEMMQ8(m, n, k int, a []float32, lda int, q []byte, ldq int, signed bool, zq int32, scale float32, c []float32, ldc int) {
	checkLinearQ8("SGEMMQ8", m, n, k, a, lda, q, ldq, signed, zq, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleC(m, n, 0, c, ldc)
		return
	}
	bq := quantB{q: q, ldq: ldq, signed: signed, zq: float32(zq), scale: scale}
	e.blocked(false, true, m, n, k, 1, a, lda, nil, 0, nil, bq, 0, c, ldc, e.threads)
}

// quantB is a byte B operand being dequantized as the blocked driver packs
// it (SGEMMQ8): n rows of k bytes, (q − zq)·scale.
type quantB struct {
	q      []byte
	ldq    int
	signed bool
	zq     float32
	scale  float32
}

// packSliver packs columns [c0, c0+cols) of op(B) = ((Q − zq)·scale)ᵀ
// over depth [pc, pc+depth) into an nr-wide sliver dst, as packPanel packs
// a float32 B: dst[p·nr + r] is row c0+r of Q at depth pc+p, dequantized,
// and zero for cols ≤ r < nr.
func (b *quantB) packSliver(dst []float32, nr, cols, depth, c0, pc int) {
	done := packQ8Fast(dst, nr, cols, depth, b, c0, pc)
	for p := done; p < depth; p++ {
		d := dst[p*nr : p*nr+nr]
		for r := range cols {
			d[r] = b.dequant(b.q[(c0+r)*b.ldq+pc+p])
		}
		clear(d[cols:])
	}
}

// dequant returns (v − zq)·scale as Dequantize computes it: the byte and
// the zero point converted to float32 (exactly), subtracted (exactly: both
// are integers below 2⁹) and multiplied, rounding once.
func (b *quantB) dequant(v byte) float32 {
	if b.signed {
		return (float32(int8(v)) - b.zq) * b.scale
	}
	return (float32(v) - b.zq) * b.scale
}
