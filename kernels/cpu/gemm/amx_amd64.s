#include "textflag.h"

// AMX-BF16 convolution kernel (see amx.go). The Go assembler knows no AMX
// instruction, so they are spelled out as bytes (VEX encodings from the
// Intel SDM, checked against GCC's); each line says what it is.
//
// Tiles: tmm0–tmm3 accumulate a 32×32 float32 block of C (rows: output
// channels, columns: frames), tmm4/tmm5 hold A (16 channels × 32 depth
// values in bfloat16 each), tmm6/tmm7 hold B (16 depth pairs × 16 frames,
// pairs interleaved as TDPBF16PS wants).

// func amxConvRows(cfg *byte, a *uint16, b *uint32, off *int, steps, bstride int, c *float32, ldc, tpairs int)
//
// For each of tpairs column pairs (32 frames): C block = Σ over steps s of
// A tiles (a + s·1024 for rows 0–15, a + (steps+s)·1024 for rows 16–31,
// 64-byte rows) times B tiles at b + off[s] (+ 64 bytes for the second 16
// frames; rows bstride bytes apart), stored at c with rows ldc bytes apart;
// then b and c advance by 128 bytes.
TEXT ·amxConvRows(SB), NOSPLIT, $0-72
	MOVQ cfg+0(FP), DI
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG (DI)
	MOVQ tpairs+64(FP), R13
	MOVQ b+16(FP), R10
	MOVQ c+48(FP), R11

tploop:
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC0 // TILEZERO tmm0
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC8 // TILEZERO tmm1
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD0 // TILEZERO tmm2
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD8 // TILEZERO tmm3
	MOVQ a+8(FP), AX
	MOVQ steps+32(FP), R9
	MOVQ R9, BX
	SHLQ $10, BX
	ADDQ AX, BX
	MOVQ off+24(FP), R8
	MOVQ $64, CX
	MOVQ bstride+40(FP), DX

steploop:
	MOVQ (R8), SI
	ADDQ R10, SI
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x24; BYTE $0x08 // TILELOADD (AX)(CX*1), tmm4
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x2C; BYTE $0x0B // TILELOADD (BX)(CX*1), tmm5
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x34; BYTE $0x16 // TILELOADD (SI)(DX*1), tmm6
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x7C; BYTE $0x16; BYTE $0x40 // TILELOADD 64(SI)(DX*1), tmm7
	BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xC4 // TDPBF16PS tmm0 += tmm4·tmm6
	BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xCC // TDPBF16PS tmm1 += tmm4·tmm7
	BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xD5 // TDPBF16PS tmm2 += tmm5·tmm6
	BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xDD // TDPBF16PS tmm3 += tmm5·tmm7
	ADDQ $1024, AX
	ADDQ $1024, BX
	ADDQ $8, R8
	DECQ R9
	JNZ  steploop

	MOVQ ldc+56(FP), DX
	MOVQ R11, DI
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x17 // TILESTORED tmm0, (DI)(DX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x4C; BYTE $0x17; BYTE $0x40 // TILESTORED tmm1, 64(DI)(DX*1)
	MOVQ DX, SI
	SHLQ $4, SI
	ADDQ SI, DI
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x17 // TILESTORED tmm2, (DI)(DX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x5C; BYTE $0x17; BYTE $0x40 // TILESTORED tmm3, 64(DI)(DX*1)
	ADDQ $128, R10
	ADDQ $128, R11
	DECQ R13
	JNZ  tploop

	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 // TILERELEASE
	RET

// func bf16Pairs(dst *uint32, x0, x1 *float32, n int)
// dst[i] = bf16(x0[i]) | bf16(x1[i])<<16, rounding to nearest even
// (NaN stays NaN for quiet NaNs); n is a multiple of 16.
TEXT ·bf16Pairs(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x0+8(FP), SI
	MOVQ x1+16(FP), DX
	MOVQ n+24(FP), CX
	MOVL $0x7FFF, AX
	VPBROADCASTD AX, Z30
	MOVL $1, AX
	VPBROADCASTD AX, Z29
	MOVL $0xFFFF0000, AX
	VPBROADCASTD AX, Z28

pairloop:
	TESTQ CX, CX
	JZ    pairdone
	VMOVDQU32 (SI), Z0
	VMOVDQU32 (DX), Z1
	VPSRLD    $16, Z0, Z2
	VPANDD    Z29, Z2, Z2
	VPADDD    Z30, Z2, Z2
	VPADDD    Z2, Z0, Z0
	VPSRLD    $16, Z0, Z0
	VPSRLD    $16, Z1, Z3
	VPANDD    Z29, Z3, Z3
	VPADDD    Z30, Z3, Z3
	VPADDD    Z3, Z1, Z1
	VPANDD    Z28, Z1, Z1
	VPORD     Z1, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DX
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       pairloop

pairdone:
	VZEROUPPER
	RET

// func bf16Adjacent(dst *uint32, x *float32, n int)
// dst[i] = bf16(x[2i]) | bf16(x[2i+1])<<16 for i < n/2, rounding as
// bf16Pairs does; n is a multiple of 16. Rounded values keep their high
// halves, which VPMOVDW packs in order: the pairs of neighbours.
TEXT ·bf16Adjacent(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x7FFF, AX
	VPBROADCASTD AX, Z30
	MOVL $1, AX
	VPBROADCASTD AX, Z29

adjloop:
	TESTQ CX, CX
	JZ    adjdone
	VMOVDQU32 (SI), Z0
	VPSRLD    $16, Z0, Z2
	VPANDD    Z29, Z2, Z2
	VPADDD    Z30, Z2, Z2
	VPADDD    Z2, Z0, Z0
	VPSRLD    $16, Z0, Z0
	VPMOVDW   Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $16, CX
	JMP       adjloop

adjdone:
	VZEROUPPER
	RET
