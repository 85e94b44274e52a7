#include "textflag.h"

// Kernels of LinearQ8Int16 (qgemv16.go): byte weights times a row of A held
// as 16-bit integers split into two signed bytes, x = 256·h + l, summed
// exactly with AVX512_VNNI's VPDPBUSD (unsigned weight bytes times signed
// activation bytes, four products a 32-bit lane).

// X16ROW turns row r's lane sums into its output: lane = 256·H + L − corr
// (exact: the true lane value fits in an int32 for k ≤ 4096, so the
// wrapping of the intermediate terms cancels), the 16 lanes summed in
// float64 (exact for integers below 2⁵³), times factor (X31), rounded to
// float32 and stored at off(R11). H is hz/hy, L is lz; Z12–Z14 are scratch.
#define X16ROW(hz, hy, lz, off) \
	VPSLLD        $8, hz, hz;       \
	VPADDD        lz, hz, hz;       \
	VPSUBD        (R15), hz, hz;    \
	VEXTRACTI64X4 $1, hz, Y12;      \
	VCVTDQ2PD     hy, Z13;          \
	VCVTDQ2PD     Y12, Z14;         \
	VADDPD        Z14, Z13, Z13;    \
	VEXTRACTF64X4 $1, Z13, Y14;     \
	VADDPD        Y14, Y13, Y13;    \
	VEXTRACTF128  $1, Y13, X14;     \
	VADDPD        X14, X13, X13;    \
	VPERMILPD     $1, X13, X14;     \
	VADDSD        X14, X13, X13;    \
	VMULSD        X31, X13, X13;    \
	VCVTSD2SS     X13, X13, X13;    \
	VMOVSS        X13, off(R11)

// FLIP_S8 maps int8 weight bytes to uint8 (q + 128: the sign bit flipped);
// FLIP_U8 leaves uint8 bytes as they are.
#define FLIP_S8(z) VPXORD Z30, z, z
#define FLIP_U8(z)

// DOTS_X16 is the body of both kernels; FLIP is FLIP_S8 or FLIP_U8.
// Rows go four at a time (H in Z0–Z3, L in Z4–Z7, weights in Z8–Z11, the
// chunk of h and l in Z16/Z17), then one at a time.
#define DOTS_X16(FLIP) \
	MOVQ         h+0(FP), SI;        \
	MOVQ         l+8(FP), DI;        \
	MOVQ         corr+16(FP), R15;   \
	MOVQ         q+24(FP), R12;      \
	MOVQ         ldq+32(FP), R8;     \
	MOVQ         k+40(FP), R9;       \
	MOVQ         rows+48(FP), R10;   \
	VMOVSD       factor+56(FP), X31; \
	MOVQ         out+64(FP), R11;    \
	MOVL         $0x80808080, AX;    \
	VPBROADCASTD AX, Z30;            \
quad:                             \
	CMPQ   R10, $4;                  \
	JL     single;                   \
	VPXORD Z0, Z0, Z0;               \
	VPXORD Z1, Z1, Z1;               \
	VPXORD Z2, Z2, Z2;               \
	VPXORD Z3, Z3, Z3;               \
	VPXORD Z4, Z4, Z4;               \
	VPXORD Z5, Z5, Z5;               \
	VPXORD Z6, Z6, Z6;               \
	VPXORD Z7, Z7, Z7;               \
	LEAQ   (R12)(R8*1), R13;         \
	LEAQ   (R12)(R8*2), R14;         \
	LEAQ   (R13)(R8*2), DX;          \
	XORQ   CX, CX;                   \
quadloop:                         \
	VMOVDQU64 (SI)(CX*1), Z16;       \
	VMOVDQU64 (DI)(CX*1), Z17;       \
	VMOVDQU64 (R12)(CX*1), Z8;       \
	VMOVDQU64 (R13)(CX*1), Z9;       \
	VMOVDQU64 (R14)(CX*1), Z10;      \
	VMOVDQU64 (DX)(CX*1), Z11;       \
	FLIP(Z8);                        \
	FLIP(Z9);                        \
	FLIP(Z10);                       \
	FLIP(Z11);                       \
	VPDPBUSD  Z16, Z8, Z0;           \
	VPDPBUSD  Z17, Z8, Z4;           \
	VPDPBUSD  Z16, Z9, Z1;           \
	VPDPBUSD  Z17, Z9, Z5;           \
	VPDPBUSD  Z16, Z10, Z2;          \
	VPDPBUSD  Z17, Z10, Z6;          \
	VPDPBUSD  Z16, Z11, Z3;          \
	VPDPBUSD  Z17, Z11, Z7;          \
	ADDQ      $64, CX;               \
	CMPQ      CX, R9;                \
	JLT       quadloop;              \
	X16ROW(Z0, Y0, Z4, 0);           \
	X16ROW(Z1, Y1, Z5, 4);           \
	X16ROW(Z2, Y2, Z6, 8);           \
	X16ROW(Z3, Y3, Z7, 12);          \
	ADDQ   $16, R11;                 \
	LEAQ   (R12)(R8*4), R12;         \
	SUBQ   $4, R10;                  \
	JMP    quad;                     \
single:                           \
	TESTQ  R10, R10;                 \
	JZ     done;                     \
	VPXORD Z0, Z0, Z0;               \
	VPXORD Z4, Z4, Z4;               \
	XORQ   CX, CX;                   \
singleloop:                       \
	VMOVDQU64 (R12)(CX*1), Z8;       \
	FLIP(Z8);                        \
	VPDPBUSD  (SI)(CX*1), Z8, Z0;    \
	VPDPBUSD  (DI)(CX*1), Z8, Z4;    \
	ADDQ      $64, CX;               \
	CMPQ      CX, R9;                \
	JLT       singleloop;            \
	X16ROW(Z0, Y0, Z4, 0);           \
	ADDQ   $4, R11;                  \
	ADDQ   R8, R12;                  \
	DECQ   R10;                      \
	JMP    single;                   \
done:                             \
	VZEROUPPER;                      \
	RET

// func dotsX16U8VNNI(h, l *int8, corr *int32, q *byte, ldq, k, rows int, factor float64, out *float32)
// out[r] = float32(factor·Σ_{p<k} (256·h[p] + l[p])·(q[r·ldq+p] − zq)) for
// r < rows, uint8 weights, with Σ_p (256·h[p] + l[p])·zq taken lane by lane
// from corr (16 int32s, lane t holding the bytes p with p mod 64 in
// [4t, 4t+4)); k is a positive multiple of 64, at most 4096.
TEXT ·dotsX16U8VNNI(SB), NOSPLIT, $0-72
	DOTS_X16(FLIP_U8)

// func dotsX16S8VNNI(h, l *int8, corr *int32, q *byte, ldq, k, rows int, factor float64, out *float32)
// The int8-weight form of dotsX16U8VNNI: each weight byte has its sign bit
// flipped (q + 128, unsigned) and corr holds the zero point plus 128.
TEXT ·dotsX16S8VNNI(SB), NOSPLIT, $0-72
	DOTS_X16(FLIP_S8)
