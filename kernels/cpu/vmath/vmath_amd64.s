#include "textflag.h"
#include "vmath_amd64.h"

// Constants of the exponential: range reduction by ln 2 (split in a high
// and a low part so n·ln2 is exact), a degree-7 Taylor polynomial on
// |r| ≤ ln2/2, and the clamp that keeps the reduction finite.
DATA expc<>+0(SB)/4, $0x3fb8aa3b  // log2(e)
DATA expc<>+4(SB)/4, $0x3f317200  // ln2 high
DATA expc<>+8(SB)/4, $0x35bfbe8e  // ln2 low
DATA expc<>+12(SB)/4, $0x39500d01 // 1/5040
DATA expc<>+16(SB)/4, $0x3ab60b61 // 1/720
DATA expc<>+20(SB)/4, $0x3c088889 // 1/120
DATA expc<>+24(SB)/4, $0x3d2aaaab // 1/24
DATA expc<>+28(SB)/4, $0x3e2aaaab // 1/6
DATA expc<>+32(SB)/4, $0x3f000000 // 1/2
DATA expc<>+36(SB)/4, $0x3f800000 // 1
DATA expc<>+40(SB)/4, $0xc2d00000 // −104: below it eˣ rounds to 0
DATA expc<>+44(SB)/4, $0x42b20000 // 89: above it eˣ overflows
GLOBL expc<>(SB), RODATA|NOPTR, $48

// LOADEXP broadcasts the constants into Z16–Z27.
#define LOADEXP \
	VBROADCASTSS expc<>+0(SB), Z16;  \
	VBROADCASTSS expc<>+4(SB), Z17;  \
	VBROADCASTSS expc<>+8(SB), Z18;  \
	VBROADCASTSS expc<>+12(SB), Z19; \
	VBROADCASTSS expc<>+16(SB), Z20; \
	VBROADCASTSS expc<>+20(SB), Z21; \
	VBROADCASTSS expc<>+24(SB), Z22; \
	VBROADCASTSS expc<>+28(SB), Z23; \
	VBROADCASTSS expc<>+32(SB), Z24; \
	VBROADCASTSS expc<>+36(SB), Z25; \
	VBROADCASTSS expc<>+40(SB), Z26; \
	VBROADCASTSS expc<>+44(SB), Z27

// EXP sets y = eˣ for 16 lanes (x is kept; Z2, Z3, K2 and K5 are
// clobbered). NaN lanes pass through. Lanes below −104 (where eˣ rounds to
// 0: −∞ for a masked logit or attention score) are set to 0 without the
// final scaling: scaling into the subnormal range costs a microcode assist
// of ~150 cycles a lane on Intel cores (default MXCSR), which made a
// log-sum-exp over Whisper's 51,865 logits, 1,500 of them masked, take
// ~70 µs on the H100 host's Xeon against ~13 on the EPYC.
#define EXP(x, y) \
	VCMPPS       $13, Z26, x, K5; \
	VMAXPS       Z26, x, Z2;  \
	VMINPS       Z27, Z2, Z2; \
	VMULPS       Z16, Z2, Z3; \
	VRNDSCALEPS  $0, Z3, Z3;  \
	VFNMADD231PS Z17, Z3, Z2; \
	VFNMADD231PS Z18, Z3, Z2; \
	VMOVAPS      Z19, y;      \
	VFMADD213PS  Z20, Z2, y;  \
	VFMADD213PS  Z21, Z2, y;  \
	VFMADD213PS  Z22, Z2, y;  \
	VFMADD213PS  Z23, Z2, y;  \
	VFMADD213PS  Z24, Z2, y;  \
	VFMADD213PS  Z25, Z2, y;  \
	VFMADD213PS  Z25, Z2, y;  \
	VSCALEFPS.Z  Z3, y, K5, y; \
	VCMPPS       $3, x, x, K2; \
	VMOVAPS      x, K2, y

// SIGMOID sets y = 1/(1+e⁻ˣ); e⁻ˣ overflowing to +∞ gives exactly 0
// (Z2, Z3, Z30 and K2 are clobbered).
#define SIGMOID(x, y) \
	VXORPS Z30, Z30, Z30; \
	VSUBPS x, Z30, Z30;   \
	EXP(Z30, y);          \
	VADDPS Z25, y, y;     \
	VDIVPS y, Z25, y

// TANH sets y = tanh(x) (Z2–Z13 and K2, K3 are clobbered).
#define TANH(x, y) \
	VANDPS.BCST    ABSMASK, x, Z5;   \
	VADDPS         Z5, Z5, Z6;       \
	EXP(Z6, Z7);                     \
	VADDPS         Z25, Z7, Z8;      \
	VBROADCASTSS   TWO, Z9;          \
	VDIVPS         Z8, Z9, Z9;       \
	VSUBPS         Z9, Z25, Z10;     \
	VANDPS.BCST    SIGNMASK, x, Z11; \
	VXORPS         Z11, Z10, y;      \
	VMULPS         x, x, Z12;        \
	VBROADCASTSS   T17, Z13;         \
	VFMADD213PS.BCST T15, Z12, Z13;  \
	VFMADD213PS.BCST T13, Z12, Z13;  \
	VFMADD213PS.BCST T11, Z12, Z13;  \
	VFMADD213PS.BCST T9, Z12, Z13;   \
	VFMADD213PS.BCST T7, Z12, Z13;   \
	VFMADD213PS.BCST T5, Z12, Z13;   \
	VFMADD213PS.BCST T3, Z12, Z13;   \
	VMULPS         Z12, Z13, Z13;    \
	VFMADD213PS    x, x, Z13;        \
	VCMPPS.BCST    $1, TANHSMALL, Z5, K3; \
	VMOVAPS        Z13, K3, y

// ERF sets y = erf(x): the Taylor series below 1/2, the erfc Chebyshev fit
// above (Z2–Z15 and K2, K3 are clobbered). NaN passes through.
#define ERF(x, y) \
	VMOVAPS        x, Z4;            \
	VANDPS.BCST    ABSMASK, Z4, Z5;  \
	VMULPS         Z24, Z5, Z6;      \
	VADDPS         Z25, Z6, Z6;      \
	VDIVPS         Z6, Z25, Z7;      \
	VBROADCASTSS   E9, Z8;           \
	VFMADD213PS.BCST E8, Z7, Z8;     \
	VFMADD213PS.BCST E7, Z7, Z8;     \
	VFMADD213PS.BCST E6, Z7, Z8;     \
	VFMADD213PS.BCST E5, Z7, Z8;     \
	VFMADD213PS.BCST E4, Z7, Z8;     \
	VFMADD213PS.BCST E3, Z7, Z8;     \
	VFMADD213PS.BCST E2, Z7, Z8;     \
	VFMADD213PS.BCST E1, Z7, Z8;     \
	VFMADD213PS.BCST E0, Z7, Z8;     \
	VFNMADD231PS   Z5, Z5, Z8;       \
	EXP(Z8, Z10);                    \
	VMULPS         Z7, Z10, Z10;     \
	VSUBPS         Z10, Z25, Z11;    \
	VANDPS.BCST    SIGNMASK, Z4, Z12; \
	VXORPS         Z12, Z11, Z11;    \
	VMULPS         Z4, Z4, Z13;      \
	VBROADCASTSS   S13, Z14;         \
	VFMADD213PS.BCST S11, Z13, Z14;  \
	VFMADD213PS.BCST S9, Z13, Z14;   \
	VFMADD213PS.BCST S7, Z13, Z14;   \
	VFMADD213PS.BCST S5, Z13, Z14;   \
	VFMADD213PS.BCST S3, Z13, Z14;   \
	VFMADD213PS.BCST S1, Z13, Z14;   \
	VMULPS         Z4, Z14, Z14;     \
	VCMPPS         $1, Z24, Z5, K3;  \
	VMOVAPS        Z14, K3, Z11;     \
	VMOVAPS        Z11, y

// GELU sets y = x·Φ(x) = x/2·(1 + erf(x/√2)) (Z2–Z15 and K2, K3 are
// clobbered).
#define GELU(x, y) \
	VMULPS.BCST    RSQRT2, x, Z4;    \
	ERF(Z4, Z11);                    \
	VADDPS         Z25, Z11, Z11;    \
	VMULPS         x, Z11, Z11;      \
	VMULPS         Z24, Z11, y



// HSUM reduces Z30 to a scalar in X0.
#define HSUM \
	VEXTRACTF64X4 $1, Z30, Y1; \
	VADDPS        Y1, Y30, Y0; \
	VEXTRACTF128  $1, Y0, X1;  \
	VADDPS        X1, X0, X0;  \
	VHADDPS       X0, X0, X0;  \
	VHADDPS       X0, X0, X0

// func expSubAVX512(dst, src *float32, n int, m float32) float32
TEXT ·expSubAVX512(SB), NOSPLIT, $0-36
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS m+24(FP), Z31
	LOADEXP
	VXORPS       Z30, Z30, Z30

expsub_loop:
	CMPQ    CX, $16
	JL      expsub_tail
	VMOVUPS (SI), Z0
	VSUBPS  Z31, Z0, Z0
	EXP(Z0, Z1)
	VMOVUPS Z1, (DI)
	VADDPS  Z1, Z30, Z30
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     expsub_loop

expsub_tail:
	TESTQ     CX, CX
	JZ        expsub_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VSUBPS    Z31, Z0, Z0
	EXP(Z0, Z1)
	VMOVUPS   Z1, K1, (DI)
	VADDPS    Z1, Z30, K1, Z30

expsub_done:
	HSUM
	MOVSS      X0, ret+32(FP)
	VZEROUPPER
	RET

// func maxAVX512(src *float32, n int) float32
// n ≥ 1. NaN anywhere gives NaN.
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ         src+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS (SI), Z30
	VMOVAPS      Z30, Z29
	KXORW        K3, K3, K3

max_loop:
	CMPQ    CX, $16
	JL      max_tail
	VMOVUPS (SI), Z0
	VMAXPS  Z0, Z30, Z30
	VCMPPS  $3, Z0, Z0, K2
	KORW    K2, K3, K3
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     max_loop

max_tail:
	TESTQ   CX, CX
	JZ      max_done
	TAILMASK
	VMOVAPS Z29, Z0
	VMOVUPS (SI), K1, Z0
	VMAXPS  Z0, Z30, Z30
	VCMPPS  $3, Z0, Z0, K2
	KORW    K2, K3, K3

max_done:
	VEXTRACTF64X4 $1, Z30, Y1
	VMAXPS        Y1, Y30, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VMAXPS        X1, X0, X0
	KORTESTW      K3, K3
	JZ            max_ok
	MOVL          $0x7fc00000, AX
	MOVL          AX, X0

max_ok:
	MOVSS      X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleAVX512(dst *float32, n int, s float32)
TEXT ·scaleAVX512(SB), NOSPLIT, $0-20
	MOVQ         dst+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS s+16(FP), Z31

scale_loop:
	CMPQ    CX, $16
	JL      scale_tail
	VMULPS  (DI), Z31, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     scale_loop

scale_tail:
	TESTQ     CX, CX
	JZ        scale_done
	TAILMASK
	VMOVUPS.Z (DI), K1, Z0
	VMULPS    Z0, Z31, Z0
	VMOVUPS   Z0, K1, (DI)

scale_done:
	VZEROUPPER
	RET

// func sigmoidAVX512(dst, src *float32, n int)
// 1/(1+e⁻ˣ); e⁻ˣ overflowing to +∞ gives exactly 0.
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-24
	UNARY16(SIGMOID)

// Scalar constants of tanh and the erf GELU, used through embedded
// broadcast ({1to16}) memory operands.
DATA vc<>+0(SB)/4, $0x3f3504f3 // rsqrt2
DATA vc<>+4(SB)/4, $0x7fffffff // absmask
DATA vc<>+8(SB)/4, $0x80000000 // signmask
DATA vc<>+12(SB)/4, $0x40000000 // two
DATA vc<>+16(SB)/4, $0x3f0ccccd // tanhsmall
DATA vc<>+32(SB)/4, $0x3f906ebb // s1
DATA vc<>+36(SB)/4, $0xbec093a3 // s3
DATA vc<>+40(SB)/4, $0x3de71791 // s5
DATA vc<>+44(SB)/4, $0xbcdc1672 // s7
DATA vc<>+48(SB)/4, $0x3bab2de7 // s9
DATA vc<>+52(SB)/4, $0xba6016da // s11
DATA vc<>+56(SB)/4, $0x38fcd193 // s13
DATA vc<>+60(SB)/4, $0xbfa1fc4e // e0
DATA vc<>+64(SB)/4, $0x3f8000c7 // e1
DATA vc<>+68(SB)/4, $0x3ebf88fb // e2
DATA vc<>+72(SB)/4, $0x3dc636c9 // e3
DATA vc<>+76(SB)/4, $0xbe3ec24c // e4
DATA vc<>+80(SB)/4, $0x3e8ec7cc // e5
DATA vc<>+84(SB)/4, $0xbf914e5d // e6
DATA vc<>+88(SB)/4, $0x3fbe87b0 // e7
DATA vc<>+92(SB)/4, $0xbf527892 // e8
DATA vc<>+96(SB)/4, $0x3e2ef945 // e9
DATA vc<>+100(SB)/4, $0xbeaaaaab // t3
DATA vc<>+104(SB)/4, $0x3e088889 // t5
DATA vc<>+108(SB)/4, $0xbd5d0dd1 // t7
DATA vc<>+112(SB)/4, $0x3cb327a4 // t9
DATA vc<>+116(SB)/4, $0xbc11371b // t11
DATA vc<>+120(SB)/4, $0x3b6b69e8 // t13
DATA vc<>+124(SB)/4, $0xbabed1b2 // t15
DATA vc<>+128(SB)/4, $0x3a1aac12 // t17
DATA vc<>+132(SB)/4, $0x3f22f983 // twoopi
DATA vc<>+136(SB)/4, $0x3fc90000 // pio2_1
DATA vc<>+140(SB)/4, $0x39fda000 // pio2_2
DATA vc<>+144(SB)/4, $0x33a22169 // pio2_3
DATA vc<>+148(SB)/4, $0xbe2aaaa3 // ss1
DATA vc<>+152(SB)/4, $0x3c08839e // ss2
DATA vc<>+156(SB)/4, $0xb94ca1f9 // ss3
DATA vc<>+160(SB)/4, $0x3d2aaaa5 // cc1
DATA vc<>+164(SB)/4, $0xbab6061a // cc2
DATA vc<>+168(SB)/4, $0x37ccf5ce // cc3
DATA vc<>+172(SB)/4, $0x47800000 // sinbig
GLOBL vc<>(SB), RODATA|NOPTR, $176

#define RSQRT2 vc<>+0(SB)
#define ABSMASK vc<>+4(SB)
#define SIGNMASK vc<>+8(SB)
#define TWO vc<>+12(SB)
#define T3 vc<>+100(SB)
#define T5 vc<>+104(SB)
#define T7 vc<>+108(SB)
#define T9 vc<>+112(SB)
#define T11 vc<>+116(SB)
#define T13 vc<>+120(SB)
#define T15 vc<>+124(SB)
#define T17 vc<>+128(SB)
#define TWOOPI vc<>+132(SB)
#define PIO2_1 vc<>+136(SB)
#define PIO2_2 vc<>+140(SB)
#define PIO2_3 vc<>+144(SB)
#define SS1 vc<>+148(SB)
#define SS2 vc<>+152(SB)
#define SS3 vc<>+156(SB)
#define CC1 vc<>+160(SB)
#define CC2 vc<>+164(SB)
#define CC3 vc<>+168(SB)
#define SINBIG vc<>+172(SB)
#define TANHSMALL vc<>+16(SB)
#define S1 vc<>+32(SB)
#define S3 vc<>+36(SB)
#define S5 vc<>+40(SB)
#define S7 vc<>+44(SB)
#define S9 vc<>+48(SB)
#define S11 vc<>+52(SB)
#define S13 vc<>+56(SB)
#define E0 vc<>+60(SB)
#define E1 vc<>+64(SB)
#define E2 vc<>+68(SB)
#define E3 vc<>+72(SB)
#define E4 vc<>+76(SB)
#define E5 vc<>+80(SB)
#define E6 vc<>+84(SB)
#define E7 vc<>+88(SB)
#define E8 vc<>+92(SB)
#define E9 vc<>+96(SB)

// func tanhAVX512(dst, src *float32, n int)
// |x| < 0.55: odd Taylor polynomial to x¹⁷ (no cancellation); else sign(x)·(1 − 2/(e^{2|x|}+1)).
TEXT ·tanhAVX512(SB), NOSPLIT, $0-24
	UNARY16(TANH)

// func geluAVX512(dst, src *float32, n int)
// x·Φ(x) = x/2·(1 + erf(x/√2)); erf by its Taylor series below 1/2 and by
// the erfc Chebyshev fit above, as the scalar Erf32.
TEXT ·geluAVX512(SB), NOSPLIT, $0-24
	UNARY16(GELU)

// SINQ sets y = sin(x + q·π/2) for 16 lanes, where the quadrant offset q is
// a constant 0 (sin) or 1 (cos) held as a float in Z15: x = j·π/2 + r with
// j = round(x·2/π) (π/2 in three parts, exact for |x| < 2¹⁶), then the sine
// or cosine polynomial of r by (j+q) mod 4. Lanes with |x| ≥ 2¹⁶ set bits
// in K4 for the caller to recompute. Clobbers Z2–Z13, K2–K3.
#define SINQ(x, y) \
	VMULPS.BCST      TWOOPI, x, Z2;       \
	VRNDSCALEPS      $0, Z2, Z2;          \
	VMOVAPS          x, Z3;               \
	VFNMADD231PS.BCST PIO2_1, Z2, Z3;     \
	VFNMADD231PS.BCST PIO2_2, Z2, Z3;     \
	VFNMADD231PS.BCST PIO2_3, Z2, Z3;     \
	VADDPS           Z15, Z2, Z2;         \
	VCVTPS2DQ        Z2, Z4;              \
	VMULPS           Z3, Z3, Z5;          \
	VBROADCASTSS     SS3, Z6;             \
	VFMADD213PS.BCST SS2, Z5, Z6;         \
	VFMADD213PS.BCST SS1, Z5, Z6;         \
	VMULPS           Z5, Z6, Z6;          \
	VFMADD213PS      Z3, Z3, Z6;          \
	VBROADCASTSS     CC3, Z7;             \
	VFMADD213PS.BCST CC2, Z5, Z7;         \
	VFMADD213PS.BCST CC1, Z5, Z7;         \
	VMULPS           Z5, Z7, Z7;          \
	VMULPS           Z5, Z7, Z7;          \
	VMULPS           Z24, Z5, Z8;         \
	VSUBPS           Z8, Z7, Z7;          \
	VADDPS           Z25, Z7, Z7;         \
	VPANDD           Z14, Z4, Z9;         \
	VPTESTMD         Z9, Z9, K2;          \
	VMOVAPS          Z6, y;               \
	VMOVAPS          Z7, K2, y;           \
	VPSRLD           $1, Z4, Z10;         \
	VPANDD           Z14, Z10, Z10;       \
	VPSLLD           $31, Z10, Z10;       \
	VPXORD           Z10, y, y;           \
	VANDPS.BCST      ABSMASK, x, Z11;     \
	VCMPPS.BCST      $13, SINBIG, Z11, K3; \
	KORW             K3, K4, K4

// func sinqAVX512(dst, src *float32, n int, q float32) (big bool)
TEXT ·sinqAVX512(SB), NOSPLIT, $0-33
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS q+24(FP), Z15
	LOADEXP
	MOVL         $1, AX
	VPBROADCASTD AX, Z14
	KXORW        K4, K4, K4

sin_loop:
	CMPQ    CX, $16
	JL      sin_tail
	VMOVUPS (SI), Z0
	SINQ(Z0, Z1)
	VMOVUPS Z1, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     sin_loop

sin_tail:
	TESTQ     CX, CX
	JZ        sin_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	SINQ(Z0, Z1)
	VMOVUPS   Z1, K1, (DI)

sin_done:
	KORTESTW   K4, K4
	SETNE      big+32(FP)
	VZEROUPPER
	RET

// func erfAVX512(dst, src *float32, n int)
TEXT ·erfAVX512(SB), NOSPLIT, $0-24
	UNARY16(ERF)
