#include "textflag.h"

// Vector kernels of LinearQ8 (qgemv.go): float32 rows times byte weights.

// func dotsU8AVX2(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
// out[r] = Σ_{p<k} a[p]·(q[r·ldq+p] − zq) for r < rows; k is a positive
// multiple of 32. Bytes widen to int32 (VPMOVZXBD), drop the zero point,
// convert exactly to float32 and accumulate in four FMA chains.
TEXT ·dotsU8AVX2(SB), NOSPLIT, $0-56
	MOVQ         a+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         ldq+16(FP), R8
	MOVQ         k+24(FP), R9
	MOVQ         rows+32(FP), R10
	MOVL         zq+40(FP), R12
	VMOVD        R12, X15
	VPBROADCASTD X15, Y15
	MOVQ         out+48(FP), R11

u8row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   R9, CX

u8loop:
	VPMOVZXBD   (BX), Y4
	VPMOVZXBD   8(BX), Y5
	VPMOVZXBD   16(BX), Y6
	VPMOVZXBD   24(BX), Y7
	VPSUBD      Y15, Y4, Y4
	VPSUBD      Y15, Y5, Y5
	VPSUBD      Y15, Y6, Y6
	VPSUBD      Y15, Y7, Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (AX), Y4, Y0
	VFMADD231PS 32(AX), Y5, Y1
	VFMADD231PS 64(AX), Y6, Y2
	VFMADD231PS 96(AX), Y7, Y3
	ADDQ        $32, BX
	ADDQ        $128, AX
	SUBQ        $32, CX
	JNZ         u8loop

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (R11)
	ADDQ         $4, R11
	ADDQ         R8, DI
	DECQ         R10
	JNZ          u8row
	VZEROUPPER
	RET

// func dotsS8AVX2(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
// out[r] = Σ_{p<k} a[p]·(q[r·ldq+p] − zq) for r < rows; k is a positive
// multiple of 32. Bytes widen to int32 (VPMOVSXBD), drop the zero point,
// convert exactly to float32 and accumulate in four FMA chains.
TEXT ·dotsS8AVX2(SB), NOSPLIT, $0-56
	MOVQ         a+0(FP), SI
	MOVQ         q+8(FP), DI
	MOVQ         ldq+16(FP), R8
	MOVQ         k+24(FP), R9
	MOVQ         rows+32(FP), R10
	MOVL         zq+40(FP), R12
	VMOVD        R12, X15
	VPBROADCASTD X15, Y15
	MOVQ         out+48(FP), R11

s8row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   R9, CX

s8loop:
	VPMOVSXBD   (BX), Y4
	VPMOVSXBD   8(BX), Y5
	VPMOVSXBD   16(BX), Y6
	VPMOVSXBD   24(BX), Y7
	VPSUBD      Y15, Y4, Y4
	VPSUBD      Y15, Y5, Y5
	VPSUBD      Y15, Y6, Y6
	VPSUBD      Y15, Y7, Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (AX), Y4, Y0
	VFMADD231PS 32(AX), Y5, Y1
	VFMADD231PS 64(AX), Y6, Y2
	VFMADD231PS 96(AX), Y7, Y3
	ADDQ        $32, BX
	ADDQ        $128, AX
	SUBQ        $32, CX
	JNZ         s8loop

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (R11)
	ADDQ         $4, R11
	ADDQ         R8, DI
	DECQ         R10
	JNZ          s8row
	VZEROUPPER
	RET
