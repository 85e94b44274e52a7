#include "textflag.h"
#include "transpose_amd64.h"

// Packing of a byte weight for SGEMMQ8 (sgemmq8.go) with AVX-512: a block of
// up to 16 rows × 16 bytes is widened to float32, dequantized, (q − zq)·scale
// (exact conversion and subtraction, one rounding in the product, as
// Dequantize), and transposed into 16 destination rows as transpose16
// (pack_amd64.s) transposes float32 rows.

// Load source row i, dequantized, into reg when i < rows, else leave it
// zero. Z30 holds zq and Z31 the scale, broadcast; both are free until the
// transpose's first stage.
#define LOADQ(i, reg, WIDEN) \
	CMPQ      DX, $i; \
	JLE       loaded; \
	WIDEN     (SI), reg; \
	VCVTDQ2PS reg, reg; \
	VSUBPS    Z30, reg, reg; \
	VMULPS    Z31, reg, reg; \
	ADDQ      R8, SI

#define LOADALL(WIDEN) \
	LOADQ(0, Z0, WIDEN); \
	LOADQ(1, Z1, WIDEN); \
	LOADQ(2, Z2, WIDEN); \
	LOADQ(3, Z3, WIDEN); \
	LOADQ(4, Z4, WIDEN); \
	LOADQ(5, Z5, WIDEN); \
	LOADQ(6, Z6, WIDEN); \
	LOADQ(7, Z7, WIDEN); \
	LOADQ(8, Z8, WIDEN); \
	LOADQ(9, Z9, WIDEN); \
	LOADQ(10, Z10, WIDEN); \
	LOADQ(11, Z11, WIDEN); \
	LOADQ(12, Z12, WIDEN); \
	LOADQ(13, Z13, WIDEN); \
	LOADQ(14, Z14, WIDEN); \
	LOADQ(15, Z15, WIDEN)

// func transposeQ8(dst *float32, dstStride int, src *byte, srcStride int, rows int, mask uint16, signed bool, zq, scale float32)
TEXT ·transposeQ8(SB), NOSPLIT, $0-52
	MOVQ    dst+0(FP), DI
	MOVQ    dstStride+8(FP), R9
	SHLQ    $2, R9
	MOVQ    src+16(FP), SI
	MOVQ    srcStride+24(FP), R8
	MOVQ    rows+32(FP), DX
	MOVWQZX mask+40(FP), AX
	KMOVW   AX, K1
	MOVBQZX signed+42(FP), BX
	VBROADCASTSS zq+44(FP), Z30
	VBROADCASTSS scale+48(FP), Z31

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ BX, BX
	JNZ   signedRows
	LOADALL(VPMOVZXBD)
	JMP   loaded

signedRows:
	LOADALL(VPMOVSXBD)

loaded:
	TRANSPOSE16_STORE
