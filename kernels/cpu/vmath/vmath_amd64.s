#include "textflag.h"

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

// EXP sets y = eˣ for 16 lanes (x is kept; Z2, Z3 and K2 are clobbered).
// NaN lanes pass through.
#define EXP(x, y) \
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
	VSCALEFPS    Z3, y, y;    \
	VCMPPS       $3, x, x, K2; \
	VMOVAPS      x, K2, y

// TAILMASK sets K1 to the low CX bits.
#define TAILMASK \
	MOVL  $1, AX;  \
	SHLL  CX, AX;  \
	DECL  AX;      \
	KMOVW AX, K1

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
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	LOADEXP
	VXORPS Z31, Z31, Z31

sig_loop:
	CMPQ    CX, $16
	JL      sig_tail
	VSUBPS  (SI), Z31, Z0
	EXP(Z0, Z1)
	VADDPS  Z25, Z1, Z1
	VDIVPS  Z1, Z25, Z1
	VMOVUPS Z1, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     sig_loop

sig_tail:
	TESTQ     CX, CX
	JZ        sig_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VSUBPS    Z0, Z31, Z0
	EXP(Z0, Z1)
	VADDPS    Z25, Z1, Z1
	VDIVPS    Z1, Z25, Z1
	VMOVUPS   Z1, K1, (DI)

sig_done:
	VZEROUPPER
	RET
