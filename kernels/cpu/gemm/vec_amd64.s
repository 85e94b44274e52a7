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
