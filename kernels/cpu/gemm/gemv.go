package gemm

// Products with one row or one column of C (a decoder step, a bias-free
// projection of one vector) are memory-bound: packing would copy the whole
// weight matrix for a handful of flops, so they run as dot products or
// row updates straight off the caller's memory.

// gemv handles m == 1 or n == 1 (k ≥ 1, alpha ≠ 0).
func (e *Engine) gemv(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 1 {
		// c[0, j] = alpha·Σ_p opA(0,p)·opB(p,j): opA row 0 is a[p] (or
		// a[p*lda] when transposed); opB(p, j) is b[p*ldb+j] or b[j*ldb+p].
		x, incx := a, 1
		if transA {
			incx = lda
		}
		if transB {
			for jj := 0; jj < n; jj++ {
				c[jj] = axpby(alpha, dotStrided(x, incx, b[jj*ldb:], 1, k), beta, c[jj])
			}
			return
		}
		e.rowCombo(n, k, alpha, x, incx, b, ldb, beta, c)
		return
	}
	// n == 1: c[i*ldc] = alpha·Σ_p opA(i,p)·opB(p,0).
	y, incy := b, ldb
	if transB {
		incy = 1
	}
	if !transA {
		for i := 0; i < m; i++ {
			c[i*ldc] = axpby(alpha, dotStrided(a[i*lda:], 1, y, incy, k), beta, c[i*ldc])
		}
		return
	}
	// A stored k×m: opA(i, p) = a[p*lda+i], a strided dot per element.
	for i := 0; i < m; i++ {
		c[i*ldc] = axpby(alpha, dotStrided(a[i:], lda, y, incy, k), beta, c[i*ldc])
	}
}

func axpby(alpha, v, beta, c float32) float32 {
	if beta == 0 {
		return alpha * v
	}
	return alpha*v + beta*c
}

// rowCombo computes c[j] = alpha·Σ_p x[p*incx]·b[p*ldb+j] + beta·c[j]
// for j < n: a linear combination of k rows of B.
func (e *Engine) rowCombo(n, k int, alpha float32, x []float32, incx int, b []float32, ldb int, beta float32, c []float32) {
	c = c[:n]
	scaleC(1, n, beta, c, n)
	for p := 0; p < k; p++ {
		axpy(alpha*x[p*incx], b[p*ldb:p*ldb+n], c)
	}
}

// axpy computes y += s·x.
func axpy(s float32, x, y []float32) {
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

// dotStrided returns Σ_{p<k} x[p*incx]·y[p*incy], with four partial sums
// for the contiguous case.
func dotStrided(x []float32, incx int, y []float32, incy int, k int) float32 {
	if incx == 1 && incy == 1 {
		x, y = x[:k], y[:k]
		var s0, s1, s2, s3 float32
		i := 0
		for ; i+4 <= k; i += 4 {
			s0 += x[i] * y[i]
			s1 += x[i+1] * y[i+1]
			s2 += x[i+2] * y[i+2]
			s3 += x[i+3] * y[i+3]
		}
		for ; i < k; i++ {
			s0 += x[i] * y[i]
		}
		return (s0 + s1) + (s2 + s3)
	}
	var s float32
	for p := 0; p < k; p++ {
		s += x[p*incx] * y[p*incy]
	}
	return s
}
