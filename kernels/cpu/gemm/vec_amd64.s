#include "textflag.h"

// Vector kernels for products with a single row or column of C (gemv.go).
// AVX2 + FMA, 32 floats per iteration in four independent accumulators,
// then a scalar tail.

// func dotAVX2(x, y *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $32
	JLT    dotreduce

dotloop:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JGE         dotloop

dotreduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	TESTQ        CX, CX
	JZ           dotdone

dottail:
	VMOVSS      (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JNZ         dottail

dotdone:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX2(s float32, x, y *float32, n int)
// y[i] += s·x[i] for i < n.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS s+0(FP), Y0
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVQ         n+24(FP), CX
	CMPQ         CX, $32
	JLT          axpytail

axpyloop:
	VMOVUPS     (DI), Y4
	VMOVUPS     32(DI), Y5
	VMOVUPS     64(DI), Y6
	VMOVUPS     96(DI), Y7
	VFMADD231PS (SI), Y0, Y4
	VFMADD231PS 32(SI), Y0, Y5
	VFMADD231PS 64(SI), Y0, Y6
	VFMADD231PS 96(SI), Y0, Y7
	VMOVUPS     Y4, (DI)
	VMOVUPS     Y5, 32(DI)
	VMOVUPS     Y6, 64(DI)
	VMOVUPS     Y7, 96(DI)
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JGE         axpyloop

axpytail:
	TESTQ CX, CX
	JZ    axpydone

axpytail1:
	VMOVSS      (DI), X4
	VFMADD231SS (SI), X0, X4
	VMOVSS      X4, (DI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JNZ         axpytail1

axpydone:
	VZEROUPPER
	RET

// func axpy8AVX512(s *float32, x *float32, ldx int, y *float32, n int)
// y[j] = fma(s[7], x[7·ldx+j], … fma(s[0], x[j], y[j])) for j < n: eight
// axpys in a row, each element of y updated row by row in order, so the
// result is the eight calls of axpyAVX2 bit for bit, with y loaded and
// stored once instead of eight times. 16 columns at a time, the last
// 1–15 under a mask (masked-off lanes are neither read nor written).
TEXT ·axpy8AVX512(SB), NOSPLIT, $0-40
	MOVQ         s+0(FP), AX
	MOVQ         x+8(FP), SI
	MOVQ         ldx+16(FP), R8
	MOVQ         y+24(FP), DI
	MOVQ         n+32(FP), DX
	SHLQ         $2, R8
	VBROADCASTSS (AX), Z16
	VBROADCASTSS 4(AX), Z17
	VBROADCASTSS 8(AX), Z18
	VBROADCASTSS 12(AX), Z19
	VBROADCASTSS 16(AX), Z20
	VBROADCASTSS 20(AX), Z21
	VBROADCASTSS 24(AX), Z22
	VBROADCASTSS 28(AX), Z23
	LEAQ         (SI)(R8*1), R9  // row 1
	LEAQ         (SI)(R8*2), R10 // row 2
	LEAQ         (R9)(R8*2), R11 // row 3
	LEAQ         (SI)(R8*4), R12 // row 4
	LEAQ         (R9)(R8*4), R13 // row 5
	LEAQ         (R10)(R8*4), R14 // row 6
	LEAQ         (R11)(R8*4), R15 // row 7
	XORQ         CX, CX           // byte offset of the column block
	MOVQ         DX, BX
	SHRQ         $4, BX           // whole blocks of 16
	JZ           axpy8tail

axpy8loop:
	VMOVUPS     (DI)(CX*1), Z0
	VFMADD231PS (SI)(CX*1), Z16, Z0
	VFMADD231PS (R9)(CX*1), Z17, Z0
	VFMADD231PS (R10)(CX*1), Z18, Z0
	VFMADD231PS (R11)(CX*1), Z19, Z0
	VFMADD231PS (R12)(CX*1), Z20, Z0
	VFMADD231PS (R13)(CX*1), Z21, Z0
	VFMADD231PS (R14)(CX*1), Z22, Z0
	VFMADD231PS (R15)(CX*1), Z23, Z0
	VMOVUPS     Z0, (DI)(CX*1)
	ADDQ        $64, CX
	DECQ        BX
	JNZ         axpy8loop

axpy8tail:
	ANDQ        $15, DX
	JZ          axpy8done
	MOVQ        CX, BX
	MOVQ        DX, CX
	MOVL        $1, AX
	SHLL        CX, AX
	DECL        AX
	KMOVW       AX, K1
	MOVQ        BX, CX
	VMOVUPS.Z   (DI)(CX*1), K1, Z0
	VFMADD231PS (SI)(CX*1), Z16, K1, Z0
	VFMADD231PS (R9)(CX*1), Z17, K1, Z0
	VFMADD231PS (R10)(CX*1), Z18, K1, Z0
	VFMADD231PS (R11)(CX*1), Z19, K1, Z0
	VFMADD231PS (R12)(CX*1), Z20, K1, Z0
	VFMADD231PS (R13)(CX*1), Z21, K1, Z0
	VFMADD231PS (R14)(CX*1), Z22, K1, Z0
	VFMADD231PS (R15)(CX*1), Z23, K1, Z0
	VMOVUPS     Z0, K1, (DI)(CX*1)

axpy8done:
	VZEROUPPER
	RET

// ROWS8_REDUCE sums one row's accumulators in dotAVX2's order: za holds its
// Y0|Y1 and zb its Y2|Y3; (Y0 + Y1) + (Y2 + Y3), the two 128-bit halves,
// then two horizontal adds; lane 0 goes to off(DX). Y18 and Y19 are
// scratch (EVEX, hence AVX512VL).
#define ROWS8_REDUCE(za, ya, xa, zb, yb, off) \
	VEXTRACTF64X4 $1, za, Y18; \
	VADDPS        Y18, ya, ya; \
	VEXTRACTF64X4 $1, zb, Y19; \
	VADDPS        Y19, yb, yb; \
	VADDPS        yb, ya, ya; \
	VEXTRACTF32X4 $1, ya, X18; \
	VADDPS        X18, xa, xa; \
	VHADDPS       xa, xa, xa; \
	VHADDPS       xa, xa, xa; \
	VMOVSS        xa, off(DX)

// func dotRows8AVX512(m *float32, ld int, v *float32, n int, out *float32)
// out[r] = Σ m[r·ld + i]·v[i] over i < n for the eight rows r < 8; n is a
// positive multiple of 32. Each row is summed exactly as dotAVX2 sums it:
// a zmm accumulator holds two of its ymm accumulators side by side (lanes
// 0–7 and 8–15 of each 32-float block in one, 16–23 and 24–31 in the
// other), and ROWS8_REDUCE adds them in its order. Eight rows at once keep
// sixteen FMA chains in flight where dotAVX2 keeps four.
TEXT ·dotRows8AVX512(SB), NOSPLIT, $0-40
	MOVQ   m+0(FP), SI
	MOVQ   ld+8(FP), BX
	SHLQ   $2, BX
	MOVQ   v+16(FP), DI
	MOVQ   n+24(FP), CX
	MOVQ   out+32(FP), DX
	LEAQ   (SI)(BX*1), R8
	LEAQ   (SI)(BX*2), R9
	LEAQ   (R8)(BX*2), R10
	LEAQ   (SI)(BX*4), R11
	LEAQ   (R8)(BX*4), R12
	LEAQ   (R9)(BX*4), R13
	LEAQ   (R10)(BX*4), R14
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

rows8loop:
	VMOVUPS     (DI), Z16
	VMOVUPS     64(DI), Z17
	VFMADD231PS (SI), Z16, Z0
	VFMADD231PS 64(SI), Z17, Z1
	VFMADD231PS (R8), Z16, Z2
	VFMADD231PS 64(R8), Z17, Z3
	VFMADD231PS (R9), Z16, Z4
	VFMADD231PS 64(R9), Z17, Z5
	VFMADD231PS (R10), Z16, Z6
	VFMADD231PS 64(R10), Z17, Z7
	VFMADD231PS (R11), Z16, Z8
	VFMADD231PS 64(R11), Z17, Z9
	VFMADD231PS (R12), Z16, Z10
	VFMADD231PS 64(R12), Z17, Z11
	VFMADD231PS (R13), Z16, Z12
	VFMADD231PS 64(R13), Z17, Z13
	VFMADD231PS (R14), Z16, Z14
	VFMADD231PS 64(R14), Z17, Z15
	ADDQ        $128, DI
	ADDQ        $128, SI
	ADDQ        $128, R8
	ADDQ        $128, R9
	ADDQ        $128, R10
	ADDQ        $128, R11
	ADDQ        $128, R12
	ADDQ        $128, R13
	ADDQ        $128, R14
	SUBQ        $32, CX
	JNZ         rows8loop

	ROWS8_REDUCE(Z0, Y0, X0, Z1, Y1, 0)
	ROWS8_REDUCE(Z2, Y2, X2, Z3, Y3, 4)
	ROWS8_REDUCE(Z4, Y4, X4, Z5, Y5, 8)
	ROWS8_REDUCE(Z6, Y6, X6, Z7, Y7, 12)
	ROWS8_REDUCE(Z8, Y8, X8, Z9, Y9, 16)
	ROWS8_REDUCE(Z10, Y10, X10, Z11, Y11, 20)
	ROWS8_REDUCE(Z12, Y12, X12, Z13, Y13, 24)
	ROWS8_REDUCE(Z14, Y14, X14, Z15, Y15, 28)
	VZEROUPPER
	RET

// func winoTransformAVX512(dst *float32, dstStride int, src *float32, offs *int, coefT *float32, terms, outs, chunks int)
// For each chunk c < chunks of 16 columns and each r < outs (1 ≤ outs ≤ 14):
// dst[r·dstStride + 16c + l] = Σ_{i<terms} coefT[14i + r]·src[offs[i] + 16c + l],
// the terms added in order of i, each with one rounding: the Winograd
// transforms of winograd.go, one input row loaded once for all outputs.
// Outputs are kept in Z0–Z13 (only the first 4, 8 or all 14 are computed,
// as outs needs); the input row in Z16.
TEXT ·winoTransformAVX512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), R11
	SHLQ $2, R11
	MOVQ src+16(FP), SI
	MOVQ offs+24(FP), R8
	MOVQ coefT+32(FP), R9
	MOVQ terms+40(FP), R10
	MOVQ outs+48(FP), R12
	MOVQ chunks+56(FP), DX

wtchunk:

	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	XORQ BX, BX // term i
	MOVQ R9, R13 // coefT row i

wtterm:
	MOVQ    (R8)(BX*8), AX
	VMOVUPS (SI)(AX*4), Z16
	VFMADD231PS.BCST 0(R13), Z16, Z0
	VFMADD231PS.BCST 4(R13), Z16, Z1
	VFMADD231PS.BCST 8(R13), Z16, Z2
	VFMADD231PS.BCST 12(R13), Z16, Z3
	CMPQ R12, $4
	JLE  wtnext
	VFMADD231PS.BCST 16(R13), Z16, Z4
	VFMADD231PS.BCST 20(R13), Z16, Z5
	VFMADD231PS.BCST 24(R13), Z16, Z6
	VFMADD231PS.BCST 28(R13), Z16, Z7
	CMPQ R12, $8
	JLE  wtnext
	VFMADD231PS.BCST 32(R13), Z16, Z8
	VFMADD231PS.BCST 36(R13), Z16, Z9
	VFMADD231PS.BCST 40(R13), Z16, Z10
	VFMADD231PS.BCST 44(R13), Z16, Z11
	VFMADD231PS.BCST 48(R13), Z16, Z12
	VFMADD231PS.BCST 52(R13), Z16, Z13

wtnext:
	ADDQ $56, R13
	INCQ BX
	CMPQ BX, R10
	JLT  wtterm

	// Store the outs rows: row r at DI + r·R11.
	MOVQ DI, AX
	VMOVUPS Z0, (AX)
	CMPQ R12, $1
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z1, (AX)
	CMPQ R12, $2
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z2, (AX)
	CMPQ R12, $3
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z3, (AX)
	CMPQ R12, $4
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z4, (AX)
	CMPQ R12, $5
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z5, (AX)
	CMPQ R12, $6
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z6, (AX)
	CMPQ R12, $7
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z7, (AX)
	CMPQ R12, $8
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z8, (AX)
	CMPQ R12, $9
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z9, (AX)
	CMPQ R12, $10
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z10, (AX)
	CMPQ R12, $11
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z11, (AX)
	CMPQ R12, $12
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z12, (AX)
	CMPQ R12, $13
	JLE  wtstored
	ADDQ R11, AX
	VMOVUPS Z13, (AX)

wtstored:
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ DX
	JNZ  wtchunk
	VZEROUPPER
	RET
