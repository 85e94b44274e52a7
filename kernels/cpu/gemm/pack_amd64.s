#include "textflag.h"
#include "transpose_amd64.h"

// Packing helper for AVX-512: transpose a block of up to 16 source rows × 16
// columns into 16 destination rows, so that gathering matrix rows into an
// interleaved panel (dst[p*w + r] = src row r, column p) costs 64 shuffles per
// 256 elements instead of 256 scattered scalar stores.

// Load source row i into reg when i < rows, else leave it zero.
#define LOADROW(i, reg) \
	CMPQ    DX, $i; \
	JLE     loaded; \
	VMOVUPS (SI), reg; \
	ADDQ    R8, SI

// func transpose16(dst *float32, dstStride int, src *float32, srcStride int, rows int, mask uint16)
TEXT ·transpose16(SB), NOSPLIT, $0-42
	MOVQ   dst+0(FP), DI
	MOVQ   dstStride+8(FP), R9
	SHLQ   $2, R9
	MOVQ   src+16(FP), SI
	MOVQ   srcStride+24(FP), R8
	SHLQ   $2, R8
	MOVQ   rows+32(FP), DX
	MOVWQZX mask+40(FP), AX
	KMOVW  AX, K1

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
	LOADROW(0, Z0)
	LOADROW(1, Z1)
	LOADROW(2, Z2)
	LOADROW(3, Z3)
	LOADROW(4, Z4)
	LOADROW(5, Z5)
	LOADROW(6, Z6)
	LOADROW(7, Z7)
	LOADROW(8, Z8)
	LOADROW(9, Z9)
	LOADROW(10, Z10)
	LOADROW(11, Z11)
	LOADROW(12, Z12)
	LOADROW(13, Z13)
	LOADROW(14, Z14)
	LOADROW(15, Z15)

loaded:
	TRANSPOSE16_STORE
