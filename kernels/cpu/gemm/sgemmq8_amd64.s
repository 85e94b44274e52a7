#include "textflag.h"

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
	// Stage 1: interleave pairs of rows (element level).
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31

	// Stage 2: pairs of elements.
	VSHUFPS $0x44, Z18, Z16, Z0
	VSHUFPS $0xEE, Z18, Z16, Z1
	VSHUFPS $0x44, Z19, Z17, Z2
	VSHUFPS $0xEE, Z19, Z17, Z3
	VSHUFPS $0x44, Z22, Z20, Z4
	VSHUFPS $0xEE, Z22, Z20, Z5
	VSHUFPS $0x44, Z23, Z21, Z6
	VSHUFPS $0xEE, Z23, Z21, Z7
	VSHUFPS $0x44, Z26, Z24, Z8
	VSHUFPS $0xEE, Z26, Z24, Z9
	VSHUFPS $0x44, Z27, Z25, Z10
	VSHUFPS $0xEE, Z27, Z25, Z11
	VSHUFPS $0x44, Z30, Z28, Z12
	VSHUFPS $0xEE, Z30, Z28, Z13
	VSHUFPS $0x44, Z31, Z29, Z14
	VSHUFPS $0xEE, Z31, Z29, Z15

	// Stage 3: 128-bit lanes between row groups 0–7.
	VSHUFF32X4 $0x88, Z4, Z0, Z16
	VSHUFF32X4 $0x88, Z5, Z1, Z17
	VSHUFF32X4 $0x88, Z6, Z2, Z18
	VSHUFF32X4 $0x88, Z7, Z3, Z19
	VSHUFF32X4 $0xDD, Z4, Z0, Z20
	VSHUFF32X4 $0xDD, Z5, Z1, Z21
	VSHUFF32X4 $0xDD, Z6, Z2, Z22
	VSHUFF32X4 $0xDD, Z7, Z3, Z23
	VSHUFF32X4 $0x88, Z12, Z8, Z24
	VSHUFF32X4 $0x88, Z13, Z9, Z25
	VSHUFF32X4 $0x88, Z14, Z10, Z26
	VSHUFF32X4 $0x88, Z15, Z11, Z27
	VSHUFF32X4 $0xDD, Z12, Z8, Z28
	VSHUFF32X4 $0xDD, Z13, Z9, Z29
	VSHUFF32X4 $0xDD, Z14, Z10, Z30
	VSHUFF32X4 $0xDD, Z15, Z11, Z31

	// Stage 4: 128-bit lanes between the two halves; Zi is now column i.
	VSHUFF32X4 $0x88, Z24, Z16, Z0
	VSHUFF32X4 $0x88, Z25, Z17, Z1
	VSHUFF32X4 $0x88, Z26, Z18, Z2
	VSHUFF32X4 $0x88, Z27, Z19, Z3
	VSHUFF32X4 $0x88, Z28, Z20, Z4
	VSHUFF32X4 $0x88, Z29, Z21, Z5
	VSHUFF32X4 $0x88, Z30, Z22, Z6
	VSHUFF32X4 $0x88, Z31, Z23, Z7
	VSHUFF32X4 $0xDD, Z24, Z16, Z8
	VSHUFF32X4 $0xDD, Z25, Z17, Z9
	VSHUFF32X4 $0xDD, Z26, Z18, Z10
	VSHUFF32X4 $0xDD, Z27, Z19, Z11
	VSHUFF32X4 $0xDD, Z28, Z20, Z12
	VSHUFF32X4 $0xDD, Z29, Z21, Z13
	VSHUFF32X4 $0xDD, Z30, Z22, Z14
	VSHUFF32X4 $0xDD, Z31, Z23, Z15

	VMOVUPS Z0, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z1, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z2, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z3, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z4, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z5, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z6, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z7, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z8, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z9, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z10, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z11, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z12, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z13, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z14, K1, (DI)
	ADDQ    R9, DI
	VMOVUPS Z15, K1, (DI)
	VZEROUPPER
	RET
