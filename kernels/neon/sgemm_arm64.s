#include "textflag.h"

// SGEMMKernel8x12: V0–V23 accumulate the 8×12 tile, row i in V(3i)..V(3i+2)
// (four columns each); every step of the depth loads the B row into V24–V26
// and the eight A values into V27/V28, then multiplies each B vector by one A
// lane (FMLA by element), so A needs no broadcast loads.
//
// The Go assembler has no by-element forms of FMLA/FMUL, so they are encoded
// here (Arm ARM, "Advanced SIMD vector x indexed element", single precision,
// Q=1): index = H:L, Vm = M:Rm.
#define FMLA_ELEM(vd, vn, vm, i) WORD $(0x4F801000 | (((i)&1)<<21) | ((vm)<<16) | (((i)>>1)<<11) | ((vn)<<5) | (vd))
#define FMUL_ELEM(vd, vn, vm, i) WORD $(0x4F809000 | (((i)&1)<<21) | ((vm)<<16) | (((i)>>1)<<11) | ((vn)<<5) | (vd))

// Row r of the tile (accumulators 3r..3r+2) += B row · A lane.
#define ROW(r, va, lane) \
	FMLA_ELEM(3*(r), 24, va, lane); \
	FMLA_ELEM(3*(r)+1, 25, va, lane); \
	FMLA_ELEM(3*(r)+2, 26, va, lane)

// Scale row r by alpha (lane 0 of V27).
#define SCALE(r) \
	FMUL_ELEM(3*(r), 3*(r), 27, 0); \
	FMUL_ELEM(3*(r)+1, 3*(r)+1, 27, 0); \
	FMUL_ELEM(3*(r)+2, 3*(r)+2, 27, 0)

// Add beta (lane 0 of V28) times the C row in V29–V31.
#define ADDBETA(r) \
	FMLA_ELEM(3*(r), 29, 28, 0); \
	FMLA_ELEM(3*(r)+1, 30, 28, 0); \
	FMLA_ELEM(3*(r)+2, 31, 28, 0)

// func SGEMMKernel8x12(k int, a, b, c *float32, ldc int, alpha, beta float32)
TEXT ·SGEMMKernel8x12(SB), NOSPLIT, $0-48
	MOVD k+0(FP), R3
	MOVD a+8(FP), R0
	MOVD b+16(FP), R1
	MOVD c+24(FP), R2
	MOVD ldc+32(FP), R4
	LSL  $2, R4, R4

	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16

loop:
	VLD1.P 48(R1), [V24.S4, V25.S4, V26.S4]
	VLD1.P 32(R0), [V27.S4, V28.S4]
	ROW(0, 27, 0)
	ROW(1, 27, 1)
	ROW(2, 27, 2)
	ROW(3, 27, 3)
	ROW(4, 28, 0)
	ROW(5, 28, 1)
	ROW(6, 28, 2)
	ROW(7, 28, 3)
	SUBS $1, R3, R3
	BNE  loop

	FMOVS alpha+40(FP), F27
	FMOVS beta+44(FP), F28
	SCALE(0)
	SCALE(1)
	SCALE(2)
	SCALE(3)
	SCALE(4)
	SCALE(5)
	SCALE(6)
	SCALE(7)
	MOVWU beta+44(FP), R5
	AND   $0x7fffffff, R5, R5 // beta == ±0: C is not read
	CBNZ  R5, withbeta

	VST1 [V0.S4, V1.S4, V2.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V3.S4, V4.S4, V5.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V6.S4, V7.S4, V8.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V9.S4, V10.S4, V11.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V12.S4, V13.S4, V14.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V15.S4, V16.S4, V17.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V18.S4, V19.S4, V20.S4], (R2)
	ADD  R4, R2, R2
	VST1 [V21.S4, V22.S4, V23.S4], (R2)
	RET

// Rows with beta: load the C row, accumulate, store back.
#define BETAROW(r, v0, v1, v2) \
	VLD1 (R2), [V29.S4, V30.S4, V31.S4]; \
	ADDBETA(r); \
	VST1 [v0.S4, v1.S4, v2.S4], (R2); \
	ADD  R4, R2, R2

withbeta:
	BETAROW(0, V0, V1, V2)
	BETAROW(1, V3, V4, V5)
	BETAROW(2, V6, V7, V8)
	BETAROW(3, V9, V10, V11)
	BETAROW(4, V12, V13, V14)
	BETAROW(5, V15, V16, V17)
	BETAROW(6, V18, V19, V20)
	BETAROW(7, V21, V22, V23)
	RET
