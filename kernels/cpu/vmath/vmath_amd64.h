// Macros shared by the package's amd64 assembly.

// TAILMASK sets K1 to the low CX bits: the lanes of a final partial vector.
// Masked-off lanes are neither loaded nor stored.
#define TAILMASK \
	MOVL  $1, AX;  \
	SHLL  CX, AX;  \
	DECL  AX;      \
	KMOVW AX, K1

// UNARY16 is the body of func(dst, src *float32, n int) computing
// dst[i] = OP(src[i]) 16 lanes at a time, the tail under TAILMASK. OP(x, y)
// is a macro that may use the exponential's constants (LOADEXP) and clobber
// Z2–Z15, Z30, K2 and K3.
#define UNARY16(OP) \
	MOVQ      dst+0(FP), DI; \
	MOVQ      src+8(FP), SI; \
	MOVQ      n+16(FP), CX;  \
	LOADEXP;                 \
loop:                            \
	CMPQ      CX, $16;       \
	JL        tail;          \
	VMOVUPS   (SI), Z0;      \
	OP(Z0, Z1);              \
	VMOVUPS   Z1, (DI);      \
	ADDQ      $64, SI;       \
	ADDQ      $64, DI;       \
	SUBQ      $16, CX;       \
	JMP       loop;          \
tail:                            \
	TESTQ     CX, CX;        \
	JZ        done;          \
	TAILMASK;                \
	VMOVUPS.Z (SI), K1, Z0;  \
	OP(Z0, Z1);              \
	VMOVUPS   Z1, K1, (DI);  \
done:                            \
	VZEROUPPER;              \
	RET
