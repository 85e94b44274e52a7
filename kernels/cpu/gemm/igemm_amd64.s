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

// ---------------------------------------------------------------------------
// AVX2 integer kernel for CPUs without VNNI, same contract and packed layout.
// vpmaddubsw would saturate (255·127·2 > 32767), so both operands are widened
// to int16 and multiplied with vpmaddwd, which is exact. The 12×32 tile is
// computed as 3×4 sub-tiles of 4 rows × 8 columns: Y0–Y7 accumulate (row r in
// Y(2r) for columns 0–3 and Y(2r+1) for 4–7, each column as two partial sums
// in adjacent lanes), Y8/Y9 hold the widened B columns, Y10 the four rows'
// widened A bytes, Y11 one row broadcast across the register.

#define AVX2_IROW(sel, acc0, acc1) \
	VPERMQ   $sel, Y10, Y11; \
	VPMADDWD Y8, Y11, Y12; \
	VPMADDWD Y9, Y11, Y13; \
	VPADDD   Y12, acc0, acc0; \
	VPADDD   Y13, acc1, acc1

// Fold the partial sums of one row into 8 columns, apply the zero-point
// corrections (rowSum at SI, zb at DX, colTerm at R10) and store at DI.
#define AVX2_ISTORE(roff, acc0, acc1) \
	VPHADDD      acc1, acc0, acc0; \
	VPERMQ       $0xD8, acc0, acc0; \
	VPBROADCASTD roff(SI), Y11; \
	VPMULLD      (DX), Y11, Y11; \
	VPSUBD       Y11, acc0, acc0; \
	VPADDD       (R10), acc0, acc0; \
	VMOVDQU      acc0, (DI); \
	ADDQ         R8, DI

// func igemmKernelAVX2(kq int, a *uint8, b *int8, c *int32, ldc int, rowSum, zb, colTerm *int32)
TEXT ·igemmKernelAVX2(SB), NOSPLIT, $0-64
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	XORQ R12, R12 // row group g = 0..2

avx2rowgroup:
	XORQ R13, R13 // column group h = 0..3

avx2colgroup:
	MOVQ R12, R11
	SHLQ $4, R11  // 16·g: byte offset of the group's rows in a quad of A
	MOVQ R13, R9
	SHLQ $5, R9   // 32·h: byte offset of the group's columns (B bytes, int32 C)
	MOVQ a+8(FP), AX
	ADDQ R11, AX
	MOVQ b+16(FP), BX
	ADDQ R9, BX
	MOVQ kq+0(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7

avx2iloop:
	VPMOVZXBW (AX), Y10
	VPMOVSXBW (BX), Y8
	VPMOVSXBW 16(BX), Y9
	AVX2_IROW(0x00, Y0, Y1)
	AVX2_IROW(0x55, Y2, Y3)
	AVX2_IROW(0xAA, Y4, Y5)
	AVX2_IROW(0xFF, Y6, Y7)
	ADDQ $48, AX
	ADDQ $128, BX
	DECQ CX
	JNZ  avx2iloop

	MOVQ rowSum+40(FP), SI
	ADDQ R11, SI          // 4 rows × 4 bytes = 16·g
	MOVQ zb+48(FP), DX
	ADDQ R9, DX
	MOVQ colTerm+56(FP), R10
	ADDQ R9, R10
	MOVQ R12, AX
	SHLQ $2, AX
	IMULQ R8, AX          // 4·g rows down
	MOVQ c+24(FP), DI
	ADDQ AX, DI
	ADDQ R9, DI
	AVX2_ISTORE(0, Y0, Y1)
	AVX2_ISTORE(4, Y2, Y3)
	AVX2_ISTORE(8, Y4, Y5)
	AVX2_ISTORE(12, Y6, Y7)

	INCQ R13
	CMPQ R13, $4
	JLT  avx2colgroup
	INCQ R12
	CMPQ R12, $3
	JLT  avx2rowgroup
	VZEROUPPER
	RET
