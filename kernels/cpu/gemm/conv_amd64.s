#include "textflag.h"

// Offset microkernels for the implicit-GEMM convolution (see offsetKernel
// in conv.go):
//
//	c[i*ldc+j] = Σ_p a[p*MR+i]·b[off[p]+j] + beta·c[i*ldc+j]
//
// for i < MR, j < NR, p < k, k ≥ 1; C is not read when beta == 0. They are
// the SGEMM microkernels of sgemm_amd64.s with one change: B row p is loaded
// from b + 4·off[p] (a row of the convolution's input window) instead of
// the next row of a packed sliver. AVX512_ROW and AVX2_ROW are repeated
// here because macros do not cross files.

#define AVX512_ROW(off, bc, acc0, acc1) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS  Z24, bc, acc0; \
	VFMADD231PS  Z25, bc, acc1

#define OFF512_STORE(acc0, acc1) \
	VMOVUPS acc0, (DI); \
	VMOVUPS acc1, 64(DI); \
	ADDQ    R8, DI

#define OFF512_STORE_BETA(acc0, acc1) \
	VFMADD231PS (DI), Z27, acc0; \
	VFMADD231PS 64(DI), Z27, acc1; \
	VMOVUPS     acc0, (DI); \
	VMOVUPS     acc1, 64(DI); \
	ADDQ        R8, DI

// func offsetKernelAVX512(k int, a, b *float32, off *int, c *float32, ldc int, beta float32)
TEXT ·offsetKernelAVX512(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ off+24(FP), SI
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8

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
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

off512loop:
	MOVQ    (SI), R9
	VMOVUPS (BX)(R9*4), Z24
	VMOVUPS 64(BX)(R9*4), Z25
	AVX512_ROW(0, Z26, Z0, Z1)
	AVX512_ROW(4, Z27, Z2, Z3)
	AVX512_ROW(8, Z28, Z4, Z5)
	AVX512_ROW(12, Z29, Z6, Z7)
	AVX512_ROW(16, Z30, Z8, Z9)
	AVX512_ROW(20, Z31, Z10, Z11)
	AVX512_ROW(24, Z26, Z12, Z13)
	AVX512_ROW(28, Z27, Z14, Z15)
	AVX512_ROW(32, Z28, Z16, Z17)
	AVX512_ROW(36, Z29, Z18, Z19)
	AVX512_ROW(40, Z30, Z20, Z21)
	AVX512_ROW(44, Z31, Z22, Z23)
	ADDQ $48, AX
	ADDQ $8, SI
	DECQ CX
	JNZ  off512loop

	VBROADCASTSS beta+48(FP), Z27
	MOVL         beta+48(FP), R10
	ANDL         $0x7fffffff, R10 // beta == ±0: C is not read
	JNZ          off512beta
	OFF512_STORE(Z0, Z1)
	OFF512_STORE(Z2, Z3)
	OFF512_STORE(Z4, Z5)
	OFF512_STORE(Z6, Z7)
	OFF512_STORE(Z8, Z9)
	OFF512_STORE(Z10, Z11)
	OFF512_STORE(Z12, Z13)
	OFF512_STORE(Z14, Z15)
	OFF512_STORE(Z16, Z17)
	OFF512_STORE(Z18, Z19)
	OFF512_STORE(Z20, Z21)
	OFF512_STORE(Z22, Z23)
	VZEROUPPER
	RET

off512beta:
	OFF512_STORE_BETA(Z0, Z1)
	OFF512_STORE_BETA(Z2, Z3)
	OFF512_STORE_BETA(Z4, Z5)
	OFF512_STORE_BETA(Z6, Z7)
	OFF512_STORE_BETA(Z8, Z9)
	OFF512_STORE_BETA(Z10, Z11)
	OFF512_STORE_BETA(Z12, Z13)
	OFF512_STORE_BETA(Z14, Z15)
	OFF512_STORE_BETA(Z16, Z17)
	OFF512_STORE_BETA(Z18, Z19)
	OFF512_STORE_BETA(Z20, Z21)
	OFF512_STORE_BETA(Z22, Z23)
	VZEROUPPER
	RET

#define AVX2_ROW(off, bc, acc0, acc1) \
	VBROADCASTSS off(AX), bc; \
	VFMADD231PS  Y12, bc, acc0; \
	VFMADD231PS  Y13, bc, acc1

#define OFF2_STORE(acc0, acc1) \
	VMOVUPS acc0, (DI); \
	VMOVUPS acc1, 32(DI); \
	ADDQ    R8, DI

#define OFF2_STORE_BETA(acc0, acc1) \
	VFMADD231PS (DI), Y15, acc0; \
	VFMADD231PS 32(DI), Y15, acc1; \
	VMOVUPS     acc0, (DI); \
	VMOVUPS     acc1, 32(DI); \
	ADDQ        R8, DI

// func offsetKernelAVX2(k int, a, b *float32, off *int, c *float32, ldc int, beta float32)
TEXT ·offsetKernelAVX2(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ off+24(FP), SI
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

off2loop:
	MOVQ    (SI), R9
	VMOVUPS (BX)(R9*4), Y12
	VMOVUPS 32(BX)(R9*4), Y13
	AVX2_ROW(0, Y14, Y0, Y1)
	AVX2_ROW(4, Y15, Y2, Y3)
	AVX2_ROW(8, Y14, Y4, Y5)
	AVX2_ROW(12, Y15, Y6, Y7)
	AVX2_ROW(16, Y14, Y8, Y9)
	AVX2_ROW(20, Y15, Y10, Y11)
	ADDQ $24, AX
	ADDQ $8, SI
	DECQ CX
	JNZ  off2loop

	VBROADCASTSS beta+48(FP), Y15
	MOVL         beta+48(FP), R10
	ANDL         $0x7fffffff, R10
	JNZ          off2beta
	OFF2_STORE(Y0, Y1)
	OFF2_STORE(Y2, Y3)
	OFF2_STORE(Y4, Y5)
	OFF2_STORE(Y6, Y7)
	OFF2_STORE(Y8, Y9)
	OFF2_STORE(Y10, Y11)
	VZEROUPPER
	RET

off2beta:
	OFF2_STORE_BETA(Y0, Y1)
	OFF2_STORE_BETA(Y2, Y3)
	OFF2_STORE_BETA(Y4, Y5)
	OFF2_STORE_BETA(Y6, Y7)
	OFF2_STORE_BETA(Y8, Y9)
	OFF2_STORE_BETA(Y10, Y11)
	VZEROUPPER
	RET
