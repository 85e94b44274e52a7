package codegen

import (
	"fmt"
	"strings"
)

// Type is a scalar type of the lowered form. Storage types (what a buffer
// holds) and register types (what arithmetic runs in) are both Types.
type Type uint8

// Scalar types. U16 holds the bits of f16 and bf16 elements; U8 holds bool
// elements (0 or 1, like the CPU backend's byte).
const (
	TBool Type = iota + 1
	TI8
	TU8
	TU16
	TI32
	TU32
	TI64
	TF32
	TF64
)

var typeNames = [...]string{"?", "bool", "i8", "u8", "u16", "i32", "u32", "i64", "f32", "f64"}

// String returns the type's short name, as the neutral text form prints it.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// IsFloat reports whether t is f32 or f64.
func (t Type) IsFloat() bool { return t == TF32 || t == TF64 }

// Fn is what an NOp node computes. The printer maps each Fn to the
// dialect's spelling; its meaning is C's (IEEE arithmetic, no fast-math
// reassociation), which both dialects share when compiled as documented.
type Fn uint8

// Operations of the lowered form.
const (
	FAdd Fn = iota + 1
	FSub
	FMul
	FDiv
	FNeg
	FLt // comparisons give TBool
	FLe
	FGt
	FGe
	FEq
	FNe
	FAnd // logical, on TBool
	FOr
	FSelect // Args[0] ? Args[1] : Args[2], evaluating only the branch taken
	FCast   // C conversion to the node's type
	FExp
	FLog
	FSqrt
	FSin
	FCos
	FTanh
	FErf
	FFloor
	FCeil
	FTrunc
	FRint // round half to even (the default rounding mode)
	FAbs
	FPow
	FFmod        // C fmod: exact remainder with the dividend's sign
	FHalfToFloat // f16 bits (TU16) to f32, exact
	FFloatToHalf // f32 to f16 bits, round to nearest even
	FBF16ToFloat // bf16 bits to f32, exact
	FFloatToBF16 // f32 to bf16 bits, round to nearest even, NaN stays NaN
)

var fnNames = [...]string{"?", "add", "sub", "mul", "div", "neg", "lt", "le", "gt", "ge", "eq", "ne",
	"and", "or", "select", "cast", "exp", "log", "sqrt", "sin", "cos", "tanh", "erf", "floor", "ceil",
	"trunc", "rint", "abs", "pow", "fmod", "f16_to_f32", "f32_to_f16", "bf16_to_f32", "f32_to_bf16"}

// String returns the operation's name in the neutral text form.
func (f Fn) String() string {
	if int(f) < len(fnNames) {
		return fnNames[f]
	}
	return fmt.Sprintf("fn(%d)", uint8(f))
}

// NodeKind says what a Node is.
type NodeKind uint8

// Node kinds.
const (
	NReg  NodeKind = iota + 1 // the value of register Reg
	NLit                      // a literal: Lit for float types, Int otherwise
	NLoad                     // the raw element of operand Operand at its index
	NOp                       // Fn applied to Args
)

// Node is an expression tree of the lowered form. Every node has a type;
// the printers never infer one.
type Node struct {
	Kind    NodeKind
	T       Type
	Fn      Fn
	Args    []*Node
	Reg     int
	Operand int
	Lit     float64
	Int     int64
}

// Stmt assigns X to register Dst.
type Stmt struct {
	Dst int
	X   *Node
}

// Access is how an operand's element index follows from the thread's
// linear index i over the output shape.
type Access uint8

// Operand access patterns. They are part of the kernel's identity: the same
// expression over dense and over strided operands is two kernels.
const (
	// Strided: off + Σ coord[d]·stride[d], coordinates decomposed from i.
	Strided Access = iota + 1
	// Linear: off + i (the operand is dense in the output's row-major order).
	Linear
	// Scalar: off (every stride is 0: one element broadcast everywhere).
	Scalar
)

var accessNames = [...]string{"?", "strided", "linear", "scalar"}

// String returns the access pattern's name.
func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}

// Operand is one buffer argument of an elementwise kernel.
type Operand struct {
	Elem   Type   // storage type of one element
	DTypeN string // the kernels.DType it holds ("f16", "bool", ...), for names and the text form
	Access Access
}

// Kernel is the lowered form of one fused elementwise step: everything the
// printers need and nothing that depends on sizes. Operands[0] is the
// output; Operands[1+k] is the step's input k.
type Kernel struct {
	Name     string // the generated function's name: "fg_ew_" + 16 hex digits of the text form's hash
	Rank     int    // rank of the (coalesced) index space; 0 means one element
	Index32  bool   // index arithmetic fits in 32 bits (every offset and count < 2^31)
	Operands []Operand
	Regs     []Type // type of each register; Expr registers first, then temporaries
	Body     []Stmt
	Store    *Node // the value written to the output element (of Operands[0].Elem)
}

// String renders the kernel in a neutral text form: stable, readable, and
// the input of the kernel's name hash.
func (k *Kernel) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "elementwise rank=%d index32=%t\n", k.Rank, k.Index32)
	for i, o := range k.Operands {
		role := "in" + fmt.Sprint(i-1)
		if i == 0 {
			role = "out"
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", role, o.DTypeN, o.Elem, o.Access)
	}
	for r, t := range k.Regs {
		fmt.Fprintf(&b, "reg r%d %s\n", r, t)
	}
	for _, s := range k.Body {
		fmt.Fprintf(&b, "r%d = %s\n", s.Dst, s.X)
	}
	fmt.Fprintf(&b, "store %s\n", k.Store)
	return b.String()
}

// String renders the node as a prefix expression.
func (n *Node) String() string {
	switch n.Kind {
	case NReg:
		return fmt.Sprintf("r%d", n.Reg)
	case NLit:
		if n.T.IsFloat() {
			return fmt.Sprintf("%s(%v)", n.T, n.Lit)
		}
		return fmt.Sprintf("%s(%d)", n.T, n.Int)
	case NLoad:
		return fmt.Sprintf("load.%s(op%d)", n.T, n.Operand)
	case NOp:
		parts := make([]string, len(n.Args))
		for i, a := range n.Args {
			parts[i] = a.String()
		}
		return fmt.Sprintf("%s.%s(%s)", n.Fn, n.T, strings.Join(parts, ", "))
	}
	return "?"
}
