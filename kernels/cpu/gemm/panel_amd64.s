#include "textflag.h"

// Panel kernels for PanelB.MulAdd (AVX-512F). A panel is k rows of 64
// floats (256 bytes), read once front to back; each row of A is
// broadcast one value per step. The depth runs in blocks of kb steps
// (the last one shorter): each block's sums start from zero in registers
// and are added to C when it ends, so a partial sum is not rounded against
// C's magnitude at every step (see panelDepth); after the last block, with
// relu ≠ 0, the results are clamped at zero (VMAXPS against Z24 = 0)
// before they are stored. Every row's C is read before any is stored, so
// a row repeated (same A, same C) stores the same values twice. kb must
// be at least 1.

// NEXT_BLOCK sets DX to the length of the next block, min(CX, BX), and
// takes it from the remaining depth CX.
#define NEXT_BLOCK \
	MOVQ    BX, DX; \
	CMPQ    CX, DX; \
	CMOVQLT CX, DX; \
	SUBQ    DX, CX

// Four rows: Z0–Z15 accumulate (row r in Z(4r)..Z(4r+3)), Z16–Z19 hold the
// panel row, Z20–Z23 the broadcast A values.
#define P4_ROW(areg, bc, z0, z1, z2, z3) \
	VBROADCASTSS (areg), bc; \
	VFMADD231PS  Z16, bc, z0; \
	VFMADD231PS  Z17, bc, z1; \
	VFMADD231PS  Z18, bc, z2; \
	VFMADD231PS  Z19, bc, z3

#define ZERO4(z0, z1, z2, z3) \
	VPXORD z0, z0, z0; \
	VPXORD z1, z1, z1; \
	VPXORD z2, z2, z2; \
	VPXORD z3, z3, z3

#define P4_ADDC(creg, z0, z1, z2, z3) \
	VADDPS (creg), z0, z0; \
	VADDPS 64(creg), z1, z1; \
	VADDPS 128(creg), z2, z2; \
	VADDPS 192(creg), z3, z3

#define RELU4(z0, z1, z2, z3) \
	VMAXPS Z24, z0, z0; \
	VMAXPS Z24, z1, z1; \
	VMAXPS Z24, z2, z2; \
	VMAXPS Z24, z3, z3

#define P4_STORE(creg, z0, z1, z2, z3) \
	VMOVUPS z0, (creg); \
	VMOVUPS z1, 64(creg); \
	VMOVUPS z2, 128(creg); \
	VMOVUPS z3, 192(creg)

// func panel4AVX512(k, kb int, b, a0, a1, a2, a3, c0, c1, c2, c3 *float32, relu int)
TEXT ·panel4AVX512(SB), NOSPLIT, $0-96
	MOVQ k+0(FP), CX
	MOVQ kb+8(FP), BX
	MOVQ b+16(FP), SI
	MOVQ a0+24(FP), R8
	MOVQ a1+32(FP), R9
	MOVQ a2+40(FP), R10
	MOVQ a3+48(FP), R11
	MOVQ c0+56(FP), R12
	MOVQ c1+64(FP), R13
	MOVQ c2+72(FP), R14
	MOVQ c3+80(FP), R15

p4block:
	ZERO4(Z0, Z1, Z2, Z3)
	ZERO4(Z4, Z5, Z6, Z7)
	ZERO4(Z8, Z9, Z10, Z11)
	ZERO4(Z12, Z13, Z14, Z15)
	NEXT_BLOCK
	TESTQ DX, DX
	JZ    p4end

p4loop:
	VMOVUPS (SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	P4_ROW(R8, Z20, Z0, Z1, Z2, Z3)
	P4_ROW(R9, Z21, Z4, Z5, Z6, Z7)
	P4_ROW(R10, Z22, Z8, Z9, Z10, Z11)
	P4_ROW(R11, Z23, Z12, Z13, Z14, Z15)
	ADDQ $256, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $4, R11
	DECQ DX
	JNZ  p4loop

p4end:
	P4_ADDC(R12, Z0, Z1, Z2, Z3)
	P4_ADDC(R13, Z4, Z5, Z6, Z7)
	P4_ADDC(R14, Z8, Z9, Z10, Z11)
	P4_ADDC(R15, Z12, Z13, Z14, Z15)
	TESTQ CX, CX
	JZ    p4last
	P4_STORE(R12, Z0, Z1, Z2, Z3)
	P4_STORE(R13, Z4, Z5, Z6, Z7)
	P4_STORE(R14, Z8, Z9, Z10, Z11)
	P4_STORE(R15, Z12, Z13, Z14, Z15)
	JMP   p4block

p4last:
	MOVQ   relu+88(FP), AX
	TESTQ  AX, AX
	JZ     p4store
	VPXORD Z24, Z24, Z24
	RELU4(Z0, Z1, Z2, Z3)
	RELU4(Z4, Z5, Z6, Z7)
	RELU4(Z8, Z9, Z10, Z11)
	RELU4(Z12, Z13, Z14, Z15)

p4store:
	P4_STORE(R12, Z0, Z1, Z2, Z3)
	P4_STORE(R13, Z4, Z5, Z6, Z7)
	P4_STORE(R14, Z8, Z9, Z10, Z11)
	P4_STORE(R15, Z12, Z13, Z14, Z15)
	VZEROUPPER
	RET

// One row: a single chain of four accumulators would wait on the FMA
// latency every step, so even steps sum into Z0–Z3 and odd steps into
// Z4–Z7, added together at the end of each block.
// func panel1AVX512(k, kb int, b, a, c *float32, relu int)
TEXT ·panel1AVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ kb+8(FP), BX
	MOVQ b+16(FP), SI
	MOVQ a+24(FP), R8
	MOVQ c+32(FP), DI

p1block:
	ZERO4(Z0, Z1, Z2, Z3)
	ZERO4(Z4, Z5, Z6, Z7)
	NEXT_BLOCK
	MOVQ DX, AX
	SHRQ $1, AX
	JZ   p1tail

p1loop:
	VBROADCASTSS (R8), Z20
	VBROADCASTSS 4(R8), Z21
	VFMADD231PS  (SI), Z20, Z0
	VFMADD231PS  64(SI), Z20, Z1
	VFMADD231PS  128(SI), Z20, Z2
	VFMADD231PS  192(SI), Z20, Z3
	VFMADD231PS  256(SI), Z21, Z4
	VFMADD231PS  320(SI), Z21, Z5
	VFMADD231PS  384(SI), Z21, Z6
	VFMADD231PS  448(SI), Z21, Z7
	ADDQ         $512, SI
	ADDQ         $8, R8
	DECQ         AX
	JNZ          p1loop

p1tail:
	ANDQ $1, DX
	JZ   p1end
	VBROADCASTSS (R8), Z20
	VFMADD231PS  (SI), Z20, Z0
	VFMADD231PS  64(SI), Z20, Z1
	VFMADD231PS  128(SI), Z20, Z2
	VFMADD231PS  192(SI), Z20, Z3
	ADDQ         $256, SI
	ADDQ         $4, R8

p1end:
	VADDPS Z4, Z0, Z0
	VADDPS Z5, Z1, Z1
	VADDPS Z6, Z2, Z2
	VADDPS Z7, Z3, Z3
	P4_ADDC(DI, Z0, Z1, Z2, Z3)
	TESTQ  CX, CX
	JZ     p1last
	P4_STORE(DI, Z0, Z1, Z2, Z3)
	JMP    p1block

p1last:
	MOVQ   relu+40(FP), AX
	TESTQ  AX, AX
	JZ     p1store
	VPXORD Z24, Z24, Z24
	RELU4(Z0, Z1, Z2, Z3)

p1store:
	P4_STORE(DI, Z0, Z1, Z2, Z3)
	VZEROUPPER
	RET

// Two rows: Z0–Z7 accumulate (row r in Z(4r)..Z(4r+3)), eight chains, so
// the FMA latency is covered without splitting the depth.
// func panel2AVX512(k, kb int, b, a0, a1, c0, c1 *float32, relu int)
TEXT ·panel2AVX512(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ kb+8(FP), BX
	MOVQ b+16(FP), SI
	MOVQ a0+24(FP), R8
	MOVQ a1+32(FP), R9
	MOVQ c0+40(FP), R12
	MOVQ c1+48(FP), R13

p2block:
	ZERO4(Z0, Z1, Z2, Z3)
	ZERO4(Z4, Z5, Z6, Z7)
	NEXT_BLOCK
	TESTQ DX, DX
	JZ    p2end

p2loop:
	VMOVUPS (SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	P4_ROW(R8, Z20, Z0, Z1, Z2, Z3)
	P4_ROW(R9, Z21, Z4, Z5, Z6, Z7)
	ADDQ $256, SI
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ DX
	JNZ  p2loop

p2end:
	P4_ADDC(R12, Z0, Z1, Z2, Z3)
	P4_ADDC(R13, Z4, Z5, Z6, Z7)
	TESTQ CX, CX
	JZ    p2last
	P4_STORE(R12, Z0, Z1, Z2, Z3)
	P4_STORE(R13, Z4, Z5, Z6, Z7)
	JMP   p2block

p2last:
	MOVQ   relu+56(FP), AX
	TESTQ  AX, AX
	JZ     p2store
	VPXORD Z24, Z24, Z24
	RELU4(Z0, Z1, Z2, Z3)
	RELU4(Z4, Z5, Z6, Z7)

p2store:
	P4_STORE(R12, Z0, Z1, Z2, Z3)
	P4_STORE(R13, Z4, Z5, Z6, Z7)
	VZEROUPPER
	RET
