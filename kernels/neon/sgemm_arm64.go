package neon

// SGEMMKernel8x12 computes one 8×12 tile of C from packed panels:
//
//	c[i*ldc+j] = alpha·Σ_p a[p*8+i]·b[p*12+j] + beta·c[i*ldc+j]
//
// for i < 8, j < 12, p < k. a is an A micro-panel (8 values per step of the
// depth), b a B sliver (12 values per step), c the tile's top-left element in
// a row-major C of row stride ldc (elements). k must be ≥ 1. C is not read
// when beta is ±0, so NaNs there are overwritten. The caller guarantees that
// a, b and c address 8k, 12k and 7·ldc+12 valid elements.
//
//go:noescape
func SGEMMKernel8x12(k int, a, b, c *float32, ldc int, alpha, beta float32)
