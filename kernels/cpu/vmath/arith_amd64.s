#include "textflag.h"
#include "vmath_amd64.h"

// Slice arithmetic (see arith.go). Tails run under a mask of the low CX
// lanes; masked-off lanes are neither loaded nor stored.

// func binaryAVX512(op int, dst, a, b *float32, n int)
TEXT ·binaryAVX512(SB), NOSPLIT, $0-40
	MOVQ op+0(FP), R8
	MOVQ dst+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ n+32(FP), CX
	CMPQ R8, $0
	JEQ  bin_add
	CMPQ R8, $1
	JEQ  bin_sub
	CMPQ R8, $2
	JEQ  bin_mul
	JMP  bin_div

bin_add:
	CMPQ    CX, $32
	JL      bin_add16
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VADDPS   (DX), Z0, Z0
	VADDPS   64(DX), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     bin_add

bin_add16:
	CMPQ    CX, $16
	JL      bin_addtail
	VMOVUPS (SI), Z0
	VADDPS   (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX

bin_addtail:
	TESTQ     CX, CX
	JZ        bin_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VADDPS     Z1, Z0, K1, Z0
	VMOVUPS   Z0, K1, (DI)
	JMP       bin_done

bin_sub:
	CMPQ    CX, $32
	JL      bin_sub16
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VSUBPS   (DX), Z0, Z0
	VSUBPS   64(DX), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     bin_sub

bin_sub16:
	CMPQ    CX, $16
	JL      bin_subtail
	VMOVUPS (SI), Z0
	VSUBPS   (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX

bin_subtail:
	TESTQ     CX, CX
	JZ        bin_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VSUBPS     Z1, Z0, K1, Z0
	VMOVUPS   Z0, K1, (DI)
	JMP       bin_done

bin_mul:
	CMPQ    CX, $32
	JL      bin_mul16
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMULPS   (DX), Z0, Z0
	VMULPS   64(DX), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     bin_mul

bin_mul16:
	CMPQ    CX, $16
	JL      bin_multail
	VMOVUPS (SI), Z0
	VMULPS   (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX

bin_multail:
	TESTQ     CX, CX
	JZ        bin_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VMULPS     Z1, Z0, K1, Z0
	VMOVUPS   Z0, K1, (DI)
	JMP       bin_done

bin_div:
	CMPQ    CX, $32
	JL      bin_div16
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VDIVPS   (DX), Z0, Z0
	VDIVPS   64(DX), Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     bin_div

bin_div16:
	CMPQ    CX, $16
	JL      bin_divtail
	VMOVUPS (SI), Z0
	VDIVPS   (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX

bin_divtail:
	TESTQ     CX, CX
	JZ        bin_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VDIVPS     Z1, Z0, K1, Z0
	VMOVUPS   Z0, K1, (DI)
	JMP       bin_done

bin_done:
	VZEROUPPER
	RET

// func fillAVX512(dst *float32, n int, v float32)
TEXT ·fillAVX512(SB), NOSPLIT, $0-20
	MOVQ         dst+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS v+16(FP), Z0

fill_loop:
	CMPQ    CX, $16
	JL      fill_tail
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     fill_loop

fill_tail:
	TESTQ   CX, CX
	JZ      fill_done
	TAILMASK
	VMOVUPS Z0, K1, (DI)

fill_done:
	VZEROUPPER
	RET

// func affineAVX512(dst, src *float32, n int, s, t float32)
TEXT ·affineAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s+24(FP), Z30
	VBROADCASTSS t+28(FP), Z31

affine_loop:
	CMPQ    CX, $32
	JL      affine16
	VMULPS  (SI), Z30, Z0
	VMULPS  64(SI), Z30, Z1
	VADDPS  Z31, Z0, Z0
	VADDPS  Z31, Z1, Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     affine_loop

affine16:
	CMPQ    CX, $16
	JL      affine_tail
	VMULPS  (SI), Z30, Z0
	VADDPS  Z31, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX

affine_tail:
	TESTQ     CX, CX
	JZ        affine_done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMULPS    Z30, Z0, Z0
	VADDPS    Z31, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

affine_done:
	VZEROUPPER
	RET

// HSUMPD sets X4 to the sum of the eight float64 lanes of Z4 (Z5 clobbered).
#define HSUMPD \
	VEXTRACTF64X4 $1, Z4, Y5; \
	VADDPD        Y5, Y4, Y4; \
	VEXTRACTF128  $1, Y4, X5; \
	VADDPD        X5, X4, X4; \
	VUNPCKHPD     X4, X4, X5; \
	VADDSD        X5, X4, X4

// func sumF64AVX512(x *float32, n int) float64
// Four float64 accumulators of eight lanes; elements past the last
// multiple of eight are added one at a time.
TEXT ·sumF64AVX512(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXORQ Z4, Z4, Z4
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8

sum_loop:
	CMPQ      CX, $32
	JL        sum8
	VCVTPS2PD (SI), Z0
	VCVTPS2PD 32(SI), Z1
	VCVTPS2PD 64(SI), Z2
	VCVTPS2PD 96(SI), Z3
	VADDPD    Z0, Z4, Z4
	VADDPD    Z1, Z6, Z6
	VADDPD    Z2, Z7, Z7
	VADDPD    Z3, Z8, Z8
	ADDQ      $128, SI
	SUBQ      $32, CX
	JMP       sum_loop

sum8:
	CMPQ      CX, $8
	JL        sum_reduce
	VCVTPS2PD (SI), Z0
	VADDPD    Z0, Z4, Z4
	ADDQ      $32, SI
	SUBQ      $8, CX
	JMP       sum8

sum_reduce:
	VADDPD Z6, Z4, Z4
	VADDPD Z8, Z7, Z7
	VADDPD Z7, Z4, Z4
	HSUMPD

sum_tail:
	TESTQ    CX, CX
	JZ       sum_done
	VCVTSS2SD (SI), X5, X5
	VADDSD   X5, X4, X4
	ADDQ     $4, SI
	DECQ     CX
	JMP      sum_tail

sum_done:
	VMOVSD X4, ret+16(FP)
	VZEROUPPER
	RET

// func sumSqDevF64AVX512(x *float32, n int, mean float64) float64
TEXT ·sumSqDevF64AVX512(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mean+16(FP), Z31
	VPXORQ       Z4, Z4, Z4
	VPXORQ       Z6, Z6, Z6
	VPXORQ       Z7, Z7, Z7
	VPXORQ       Z8, Z8, Z8

ssd_loop:
	CMPQ        CX, $32
	JL          ssd8
	VCVTPS2PD   (SI), Z0
	VCVTPS2PD   32(SI), Z1
	VCVTPS2PD   64(SI), Z2
	VCVTPS2PD   96(SI), Z3
	VSUBPD      Z31, Z0, Z0
	VSUBPD      Z31, Z1, Z1
	VSUBPD      Z31, Z2, Z2
	VSUBPD      Z31, Z3, Z3
	VFMADD231PD Z0, Z0, Z4
	VFMADD231PD Z1, Z1, Z6
	VFMADD231PD Z2, Z2, Z7
	VFMADD231PD Z3, Z3, Z8
	ADDQ        $128, SI
	SUBQ        $32, CX
	JMP         ssd_loop

ssd8:
	CMPQ        CX, $8
	JL          ssd_reduce
	VCVTPS2PD   (SI), Z0
	VSUBPD      Z31, Z0, Z0
	VFMADD231PD Z0, Z0, Z4
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         ssd8

ssd_reduce:
	VADDPD Z6, Z4, Z4
	VADDPD Z8, Z7, Z7
	VADDPD Z7, Z4, Z4
	HSUMPD

ssd_tail:
	TESTQ       CX, CX
	JZ          ssd_done
	VCVTSS2SD   (SI), X5, X5
	VSUBSD      X31, X5, X5
	VFMADD231SD X5, X5, X4
	ADDQ        $4, SI
	DECQ        CX
	JMP         ssd_tail

ssd_done:
	VMOVSD X4, ret+24(FP)
	VZEROUPPER
	RET

// func sumSqF64AVX512(x *float32, n int) (sum, sq float64)
TEXT ·sumSqF64AVX512(SB), NOSPLIT, $0-32
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXORQ Z4, Z4, Z4
	VPXORQ Z6, Z6, Z6
	VPXORQ Z10, Z10, Z10
	VPXORQ Z12, Z12, Z12

sq_loop:
	CMPQ        CX, $16
	JL          sq8
	VCVTPS2PD   (SI), Z0
	VCVTPS2PD   32(SI), Z1
	VADDPD      Z0, Z4, Z4
	VADDPD      Z1, Z6, Z6
	VFMADD231PD Z0, Z0, Z10
	VFMADD231PD Z1, Z1, Z12
	ADDQ        $64, SI
	SUBQ        $16, CX
	JMP         sq_loop

sq8:
	CMPQ        CX, $8
	JL          sq_reduce
	VCVTPS2PD   (SI), Z0
	VADDPD      Z0, Z4, Z4
	VFMADD231PD Z0, Z0, Z10
	ADDQ        $32, SI
	SUBQ        $8, CX

sq_reduce:
	VADDPD Z6, Z4, Z4
	HSUMPD
	VMOVAPD X4, X8
	VADDPD  Z12, Z10, Z4
	HSUMPD

sq_tail:
	TESTQ       CX, CX
	JZ          sq_done
	VCVTSS2SD   (SI), X5, X5
	VADDSD      X5, X8, X8
	VFMADD231SD X5, X5, X4
	ADDQ        $4, SI
	DECQ        CX
	JMP         sq_tail

sq_done:
	VMOVSD X8, sum+16(FP)
	VMOVSD X4, sq+24(FP)
	VZEROUPPER
	RET
