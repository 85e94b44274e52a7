#include "textflag.h"

// Integer GEMM microkernel, AVX-512 VNNI, 12×32 (see igemmKernel in
// igemm.go): Z0–Z23 accumulate int32 (row i in Z(2i), Z(2i+1)); each group
// of four along k loads the B sliver row (32 columns × 4 signed bytes) into
// Z24/Z25 and broadcasts each row's four unsigned A bytes, and vpdpbusd adds
// the four u8×s8 products of every column. vpdpbusd does not saturate.

#define VNNI_ROW(off, bc, acc0, acc1) \
	VPBROADCASTD off(AX), bc; \
	VPDPBUSD     Z24, bc, acc0; \
	VPDPBUSD     Z25, bc, acc1

// C row = acc − rowSum[i]·zb + colTerm, with zb in Z24/Z25 and colTerm in
// Z26/Z27.
#define VNNI_STORE(off, acc0, acc1) \
	VPBROADCASTD off(SI), Z28; \
	VPMULLD      Z24, Z28, Z29; \
	VPMULLD      Z25, Z28, Z30; \
	VPSUBD       Z29, acc0, acc0; \
	VPSUBD       Z30, acc1, acc1; \
	VPADDD       Z26, acc0, acc0; \
	VPADDD       Z27, acc1, acc1; \
	VMOVDQU32    acc0, (DI); \
	VMOVDQU32    acc1, 64(DI); \
	ADDQ         R8, DI

// Zero the 24 accumulators.
#define ZERO_ACC \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// One group of four along k: Z24/Z25 ← B row, then every row's vpdpbusd;
// ends by decrementing the group count in CX (flags for the loop branch).
#define VNNI_STEP \
	VMOVDQU32 (BX), Z24; \
	VMOVDQU32 64(BX), Z25; \
	VNNI_ROW(0, Z26, Z0, Z1); \
	VNNI_ROW(4, Z27, Z2, Z3); \
	VNNI_ROW(8, Z28, Z4, Z5); \
	VNNI_ROW(12, Z29, Z6, Z7); \
	VNNI_ROW(16, Z30, Z8, Z9); \
	VNNI_ROW(20, Z31, Z10, Z11); \
	VNNI_ROW(24, Z26, Z12, Z13); \
	VNNI_ROW(28, Z27, Z14, Z15); \
	VNNI_ROW(32, Z28, Z16, Z17); \
	VNNI_ROW(36, Z29, Z18, Z19); \
	VNNI_ROW(40, Z30, Z20, Z21); \
	VNNI_ROW(44, Z31, Z22, Z23); \
	ADDQ $48, AX; \
	ADDQ $128, BX; \
	DECQ CX

// func igemmKernelVNNI(kq int, a *uint8, b *int8, c *int32, ldc int, rowSum, zb, colTerm *int32)
TEXT ·igemmKernelVNNI(SB), NOSPLIT, $0-64
	MOVQ kq+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ rowSum+40(FP), SI
	MOVQ zb+48(FP), DX
	MOVQ colTerm+56(FP), R9

	ZERO_ACC

vnniloop:
	VNNI_STEP
	JNZ vnniloop

	VMOVDQU32 (DX), Z24
	VMOVDQU32 64(DX), Z25
	VMOVDQU32 (R9), Z26
	VMOVDQU32 64(R9), Z27
	VNNI_STORE(0, Z0, Z1)
	VNNI_STORE(4, Z2, Z3)
	VNNI_STORE(8, Z4, Z5)
	VNNI_STORE(12, Z6, Z7)
	VNNI_STORE(16, Z8, Z9)
	VNNI_STORE(20, Z10, Z11)
	VNNI_STORE(24, Z12, Z13)
	VNNI_STORE(28, Z14, Z15)
	VNNI_STORE(32, Z16, Z17)
	VNNI_STORE(36, Z18, Z19)
	VNNI_STORE(40, Z20, Z21)
	VNNI_STORE(44, Z22, Z23)
	VZEROUPPER
	RET

// Float epilogue for igemmKernelVNNIF32: the integer row as above, converted
// to float32, times scale[j] (R10) plus bias[j] (R11) — multiply, then add.
#define VNNI_STORE_F32(off, acc0, acc1) \
	VPBROADCASTD off(SI), Z28; \
	VPMULLD      Z24, Z28, Z29; \
	VPMULLD      Z25, Z28, Z30; \
	VPSUBD       Z29, acc0, acc0; \
	VPSUBD       Z30, acc1, acc1; \
	VPADDD       Z26, acc0, acc0; \
	VPADDD       Z27, acc1, acc1; \
	VCVTDQ2PS    acc0, acc0; \
	VCVTDQ2PS    acc1, acc1; \
	VMULPS       (R10), acc0, acc0; \
	VMULPS       64(R10), acc1, acc1; \
	VADDPS       (R11), acc0, acc0; \
	VADDPS       64(R11), acc1, acc1; \
	VMOVUPS      acc0, (DI); \
	VMOVUPS      acc1, 64(DI); \
	ADDQ         R8, DI

// func igemmKernelVNNIF32(kq int, a *uint8, b *int8, c *float32, ldc int, rowSum, zb, colTerm *int32, scale, bias *float32)
TEXT ·igemmKernelVNNIF32(SB), NOSPLIT, $0-80
	MOVQ kq+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), DI
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ rowSum+40(FP), SI
	MOVQ zb+48(FP), DX
	MOVQ colTerm+56(FP), R9
	MOVQ scale+64(FP), R10
	MOVQ bias+72(FP), R11

	ZERO_ACC

vnnif32loop:
	VNNI_STEP
	JNZ vnnif32loop

	VMOVDQU32 (DX), Z24
	VMOVDQU32 64(DX), Z25
	VMOVDQU32 (R9), Z26
	VMOVDQU32 64(R9), Z27
	VNNI_STORE_F32(0, Z0, Z1)
	VNNI_STORE_F32(4, Z2, Z3)
	VNNI_STORE_F32(8, Z4, Z5)
	VNNI_STORE_F32(12, Z6, Z7)
	VNNI_STORE_F32(16, Z8, Z9)
	VNNI_STORE_F32(20, Z10, Z11)
	VNNI_STORE_F32(24, Z12, Z13)
	VNNI_STORE_F32(28, Z14, Z15)
	VNNI_STORE_F32(32, Z16, Z17)
	VNNI_STORE_F32(36, Z18, Z19)
	VNNI_STORE_F32(40, Z20, Z21)
	VNNI_STORE_F32(44, Z22, Z23)
	VZEROUPPER
	RET
