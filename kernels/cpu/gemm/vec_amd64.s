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
