#include "textflag.h"

// Vector kernels of LinearQ8 (qgemv.go): float32 rows times byte weights.

// HSUM16 adds the 16 lanes of z into the low lane of x (z's low halves are
// y and x; t and tx are scratch).
#define HSUM16(z, y, x, t, tx) \
	VEXTRACTF64X4 $1, z, t; \
	VADDPS        t, y, y;  \
	VEXTRACTF128  $1, y, tx; \
	VADDPS        tx, x, x; \
	VHADDPS       x, x, x;  \
	VHADDPS       x, x, x

// DOTS_AVX2 is the body of the AVX2 kernels; WIDEN is VPMOVZXBD (uint8
// weights) or VPMOVSXBD (int8).
#define DOTS_AVX2(WIDEN) \
	MOVQ         a+0(FP), SI;       \
	MOVQ         q+8(FP), DI;       \
	MOVQ         ldq+16(FP), R8;    \
	MOVQ         k+24(FP), R9;      \
	MOVQ         rows+32(FP), R10;  \
	MOVL         zq+40(FP), R12;    \
	VMOVD        R12, X15;          \
	VPBROADCASTD X15, Y15;          \
	MOVQ         out+48(FP), R11;   \
row:                             \
	VXORPS Y0, Y0, Y0;              \
	VXORPS Y1, Y1, Y1;              \
	VXORPS Y2, Y2, Y2;              \
	VXORPS Y3, Y3, Y3;              \
	MOVQ   SI, AX;                  \
	MOVQ   DI, BX;                  \
	MOVQ   R9, CX;                  \
loop:                            \
	WIDEN   (BX), Y4;               \
	WIDEN   8(BX), Y5;              \
	WIDEN   16(BX), Y6;             \
	WIDEN   24(BX), Y7;             \
	VPSUBD      Y15, Y4, Y4;        \
	VPSUBD      Y15, Y5, Y5;        \
	VPSUBD      Y15, Y6, Y6;        \
	VPSUBD      Y15, Y7, Y7;        \
	VCVTDQ2PS   Y4, Y4;             \
	VCVTDQ2PS   Y5, Y5;             \
	VCVTDQ2PS   Y6, Y6;             \
	VCVTDQ2PS   Y7, Y7;             \
	VFMADD231PS (AX), Y4, Y0;       \
	VFMADD231PS 32(AX), Y5, Y1;     \
	VFMADD231PS 64(AX), Y6, Y2;     \
	VFMADD231PS 96(AX), Y7, Y3;     \
	ADDQ        $32, BX;            \
	ADDQ        $128, AX;           \
	SUBQ        $32, CX;            \
	JNZ         loop;               \
	VADDPS       Y1, Y0, Y0;        \
	VADDPS       Y3, Y2, Y2;        \
	VADDPS       Y2, Y0, Y0;        \
	VEXTRACTF128 $1, Y0, X1;        \
	VADDPS       X1, X0, X0;        \
	VHADDPS      X0, X0, X0;        \
	VHADDPS      X0, X0, X0;        \
	VMOVSS       X0, (R11);         \
	ADDQ         $4, R11;           \
	ADDQ         R8, DI;            \
	DECQ         R10;               \
	JNZ          row;               \
	VZEROUPPER;                     \
	RET                            

// DOTS_AVX512 is the body of the AVX-512 kernels; WIDEN as for DOTS_AVX2.
#define DOTS_AVX512(WIDEN) \
	MOVQ         a+0(FP), SI;       \
	MOVQ         q+8(FP), DI;       \
	MOVQ         ldq+16(FP), R8;    \
	MOVQ         k+24(FP), R9;      \
	MOVQ         rows+32(FP), R10;  \
	MOVL         zq+40(FP), R12;    \
	VMOVD        R12, X15;          \
	VPBROADCASTD X15, Z15;          \
	MOVQ         out+48(FP), R11;   \
pair:                            \
	CMPQ   R10, $2;                 \
	JL     single;                  \
	VXORPS Z0, Z0, Z0;              \
	VXORPS Z1, Z1, Z1;              \
	VXORPS Z2, Z2, Z2;              \
	VXORPS Z3, Z3, Z3;              \
	MOVQ   SI, AX;                  \
	MOVQ   DI, BX;                  \
	LEAQ   (DI)(R8*1), DX;          \
	MOVQ   R9, CX;                  \
pairloop:                        \
	VMOVUPS     (AX), Z8;           \
	VMOVUPS     64(AX), Z9;         \
	WIDEN   (BX), Z4;               \
	WIDEN   16(BX), Z5;             \
	WIDEN   (DX), Z6;               \
	WIDEN   16(DX), Z7;             \
	VPSUBD      Z15, Z4, Z4;        \
	VPSUBD      Z15, Z5, Z5;        \
	VPSUBD      Z15, Z6, Z6;        \
	VPSUBD      Z15, Z7, Z7;        \
	VCVTDQ2PS   Z4, Z4;             \
	VCVTDQ2PS   Z5, Z5;             \
	VCVTDQ2PS   Z6, Z6;             \
	VCVTDQ2PS   Z7, Z7;             \
	VFMADD231PS Z8, Z4, Z0;         \
	VFMADD231PS Z9, Z5, Z1;         \
	VFMADD231PS Z8, Z6, Z2;         \
	VFMADD231PS Z9, Z7, Z3;         \
	ADDQ        $32, BX;            \
	ADDQ        $32, DX;            \
	ADDQ        $128, AX;           \
	SUBQ        $32, CX;            \
	JNZ         pairloop;           \
	VADDPS Z1, Z0, Z0;              \
	VADDPS Z3, Z2, Z2;              \
	HSUM16(Z0, Y0, X0, Y1, X1);     \
	VMOVSS X0, (R11);               \
	HSUM16(Z2, Y2, X2, Y1, X1);     \
	VMOVSS X2, 4(R11);              \
	ADDQ   $8, R11;                 \
	LEAQ   (DI)(R8*2), DI;          \
	SUBQ   $2, R10;                 \
	JMP    pair;                    \
single:                          \
	TESTQ  R10, R10;                \
	JZ     done;                    \
	VXORPS Z0, Z0, Z0;              \
	VXORPS Z1, Z1, Z1;              \
	MOVQ   SI, AX;                  \
	MOVQ   DI, BX;                  \
	MOVQ   R9, CX;                  \
singleloop:                      \
	WIDEN   (BX), Z4;               \
	WIDEN   16(BX), Z5;             \
	VPSUBD      Z15, Z4, Z4;        \
	VPSUBD      Z15, Z5, Z5;        \
	VCVTDQ2PS   Z4, Z4;             \
	VCVTDQ2PS   Z5, Z5;             \
	VFMADD231PS (AX), Z4, Z0;       \
	VFMADD231PS 64(AX), Z5, Z1;     \
	ADDQ        $32, BX;            \
	ADDQ        $128, AX;           \
	SUBQ        $32, CX;            \
	JNZ         singleloop;         \
	VADDPS Z1, Z0, Z0;              \
	HSUM16(Z0, Y0, X0, Y1, X1);     \
	VMOVSS X0, (R11);               \
done:                            \
	VZEROUPPER;                     \
	RET                            

// func dotsU8AVX2(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
// out[r] = Σ_{p<k} a[p]·(q[r·ldq+p] − zq) for r < rows; k is a positive
// multiple of 32. Bytes widen to int32 (VPMOVZXBD), drop the zero point,
// convert exactly to float32 and accumulate in four FMA chains.
TEXT ·dotsU8AVX2(SB), NOSPLIT, $0-56
	DOTS_AVX2(VPMOVZXBD)

// func dotsS8AVX2(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
// out[r] = Σ_{p<k} a[p]·(q[r·ldq+p] − zq) for r < rows; k is a positive
// multiple of 32. Bytes widen to int32 (VPMOVSXBD), drop the zero point,
// convert exactly to float32 and accumulate in four FMA chains.
TEXT ·dotsS8AVX2(SB), NOSPLIT, $0-56
	DOTS_AVX2(VPMOVSXBD)


// func dotsU8AVX512(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
// The AVX-512 form of the kernel above: 16 lanes, and rows in pairs that
// share each load of a. k is a positive multiple of 32.
TEXT ·dotsU8AVX512(SB), NOSPLIT, $0-56
	DOTS_AVX512(VPMOVZXBD)

// func dotsS8AVX512(a *float32, q *byte, ldq, k, rows int, zq int32, out *float32)
// The AVX-512 form of the kernel above: 16 lanes, and rows in pairs that
// share each load of a. k is a positive multiple of 32.
TEXT ·dotsS8AVX512(SB), NOSPLIT, $0-56
	DOTS_AVX512(VPMOVSXBD)
