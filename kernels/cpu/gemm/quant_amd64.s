#include "textflag.h"

// AVX-512 kernels for QuantizeU8 (quant.go). Tails are handled with lane
// masks: the zeros a masked load leaves cannot change min(0, ·) or max(0, ·).

// func minMaxAVX512(x *float32, n int) (lo, hi float32, bad bool)
// lo = min(0, min x), hi = max(0, max x); bad reports a NaN or ±Inf.
TEXT ·minMaxAVX512(SB), NOSPLIT, $0-25
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXORD Z0, Z0, Z0     // running min
	VPXORD Z1, Z1, Z1     // running max
	KXORW  K2, K2, K2     // non-finite lanes seen
	CMPQ   CX, $16
	JLT    mmtail

mmloop:
	VMOVUPS     (SI), Z2
	VMINPS      Z2, Z0, Z0
	VMAXPS      Z2, Z1, Z1
	VFPCLASSPSZ $0x99, Z2, K3 // QNaN | SNaN | +Inf | −Inf
	KORW        K3, K2, K2
	ADDQ        $64, SI
	SUBQ        $16, CX
	CMPQ        CX, $16
	JGE         mmloop

mmtail:
	TESTQ CX, CX
	JZ    mmreduce
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z   (SI), K1, Z2
	VMINPS      Z2, Z0, Z0
	VMAXPS      Z2, Z1, Z1
	VFPCLASSPSZ $0x99, Z2, K3
	KORW        K3, K2, K2

mmreduce:
	VEXTRACTF32X8 $1, Z0, Y2
	VMINPS        Y2, Y0, Y0
	VEXTRACTF128  $1, Y0, X2
	VMINPS        X2, X0, X0
	VPERMILPS     $0x4E, X0, X2
	VMINPS        X2, X0, X0
	VPERMILPS     $0xB1, X0, X2
	VMINPS        X2, X0, X0
	VMOVSS        X0, lo+16(FP)

	VEXTRACTF32X8 $1, Z1, Y2
	VMAXPS        Y2, Y1, Y1
	VEXTRACTF128  $1, Y1, X2
	VMAXPS        X2, X1, X1
	VPERMILPS     $0x4E, X1, X2
	VMAXPS        X2, X1, X1
	VPERMILPS     $0xB1, X1, X2
	VMAXPS        X2, X1, X1
	VMOVSS        X1, hi+20(FP)

	KMOVW  K2, AX
	TESTL  AX, AX
	SETNE  bad+24(FP)
	VZEROUPPER
	RET

// One vector of 16: q = clamp(roundHalfEven(x/scale) + zp, 0, 255) as bytes.
// Z28 = scale, Z29 = zp, Z30 = 0, Z31 = 255. vmaxps returns its second
// source when either is NaN, so a NaN becomes 0.
#define QUANT16(reg) \
	VDIVPS      Z28, reg, reg; \
	VRNDSCALEPS $0, reg, reg; \
	VADDPS      Z29, reg, reg; \
	VMAXPS      Z30, reg, reg; \
	VMINPS      Z31, reg, reg; \
	VCVTPS2DQ   reg, reg

// func quantizeAVX512(dst *uint8, x *float32, n int, scale, zp float32)
TEXT ·quantizeAVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Z28
	VBROADCASTSS zp+28(FP), Z29
	VPXORD       Z30, Z30, Z30
	MOVL         $0x437f0000, AX // 255.0
	VPBROADCASTD AX, Z31
	CMPQ         CX, $16
	JLT          qtail

qloop:
	VMOVUPS (SI), Z0
	QUANT16(Z0)
	VPMOVDB Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $16, DI
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     qloop

qtail:
	TESTQ CX, CX
	JZ    qdone
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z0
	QUANT16(Z0)
	VPMOVDB   Z0, K1, (DI)

qdone:
	VZEROUPPER
	RET

// func sumBytesAVX512(p *uint8, n int, x uint8) uint64
// Σ (p[i] ^ x) over the first n - n%64 bytes (the caller adds the tail).
TEXT ·sumBytesAVX512(SB), NOSPLIT, $0-32
	MOVQ         p+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVBQZX      x+16(FP), AX
	VPBROADCASTB AX, Z3
	VPXORD       Z1, Z1, Z1 // 8 running qword sums
	VPXORD       Z2, Z2, Z2 // zero, for vpsadbw
	SHRQ         $6, CX
	JZ           sbreduce

sbloop:
	VMOVDQU64 (SI), Z0
	VPXORD    Z3, Z0, Z0
	VPSADBW   Z2, Z0, Z0 // |b − 0| summed per 8 bytes
	VPADDQ    Z0, Z1, Z1
	ADDQ      $64, SI
	DECQ      CX
	JNZ       sbloop

sbreduce:
	VEXTRACTI64X4 $1, Z1, Y0
	VPADDQ        Y0, Y1, Y1
	VEXTRACTI128  $1, Y1, X0
	VPADDQ        X0, X1, X1
	VPSHUFD       $0x4E, X1, X0
	VPADDQ        X0, X1, X1
	VMOVQ         X1, AX
	MOVQ          AX, ret+24(FP)
	VZEROUPPER
	RET
