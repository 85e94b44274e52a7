package kernels

import (
	"fmt"
	"strings"
)

// EOp is one instruction of a fused elementwise expression.
type EOp uint8

// Expression instructions. Unless noted, A (and B, C) name source registers
// and the result goes to Dst.
const (
	ELoad  EOp = iota // Dst = element of input A (converted from its dtype)
	EConst            // Dst = Imm
	ENeg
	EAbs
	EExp
	ELog
	ESqrt
	ERsqrt
	ESin
	ECos
	ETanh
	ESigmoid
	ERelu
	ELeakyRelu // slope Imm
	EGeluErf
	EGeluTanh
	ESilu
	EErf
	EFloor
	ECeil
	ERound // half to even, as torch.round
	ETrunc // toward zero, as a float→int cast
	ERecip
	ESign
	EIsNaN    // 1 where NaN
	ENot      // 1 where A == 0
	ERoundF16 // round to the nearest half-precision value
	ERoundBF16
	EAdd
	ESub
	EMul
	EDiv
	EPow
	EMax // NaN-propagating, as torch.maximum
	EMin
	EMod // floor modulo, sign of the divisor, as torch.remainder
	EEq  // comparisons give 1 or 0
	ENe
	ELt
	ELe
	EGt
	EGe
	EAnd // logical, on non-zero
	EOr
	EWhere // Dst = A != 0 ? B : C
	eopCount
)

var eopNames = [...]string{
	"load", "const", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos",
	"tanh", "sigmoid", "relu", "leaky_relu", "gelu_erf", "gelu_tanh", "silu",
	"erf", "floor", "ceil", "round", "trunc", "recip", "sign", "isnan", "not",
	"round_f16", "round_bf16", "add", "sub", "mul", "div", "pow", "max", "min",
	"mod", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "where",
}

// String returns the instruction's name.
func (o EOp) String() string {
	if int(o) < len(eopNames) {
		return eopNames[o]
	}
	return fmt.Sprintf("eop(%d)", uint8(o))
}

// Arity returns how many source registers the instruction reads.
func (o EOp) Arity() int {
	switch {
	case o == ELoad || o == EConst:
		return 0
	case o < EAdd:
		return 1
	case o == EWhere:
		return 3
	default:
		return 2
	}
}

// Instr is one instruction. Registers are numbered from 0; for ELoad, A is
// the index of the loaded operand in Step.In.
type Instr struct {
	Op      EOp
	Dst     uint16
	A, B, C uint16
	Imm     float64
}

// Expr is a straight-line program over registers, evaluated once per output
// element. The result register's value is converted to the output dtype on
// store (float→integer conversions saturate after truncation toward zero, as
// Trunc already applied; Bool stores 1 for non-zero).
//
// Wide asks for float64 registers: the graph sets it when an integer operand
// may exceed float32's exact range, so index arithmetic never silently rounds.
type Expr struct {
	Code    []Instr
	NumRegs int
	Result  uint16
	Wide    bool
}

// Validate checks register and operand numbering against nIn inputs.
func (e *Expr) Validate(nIn int) error {
	if e.NumRegs <= 0 || int(e.Result) >= e.NumRegs {
		return fmt.Errorf("kernels: expr result register %d outside %d registers", e.Result, e.NumRegs)
	}
	for i, in := range e.Code {
		if in.Op >= eopCount {
			return fmt.Errorf("kernels: expr instruction %d: unknown op %d", i, in.Op)
		}
		if int(in.Dst) >= e.NumRegs {
			return fmt.Errorf("kernels: expr instruction %d (%s): register %d outside %d", i, in.Op, in.Dst, e.NumRegs)
		}
		if in.Op == ELoad && int(in.A) >= nIn {
			return fmt.Errorf("kernels: expr instruction %d loads operand %d of %d", i, in.A, nIn)
		}
		srcs := [3]uint16{in.A, in.B, in.C}
		for j := 0; j < in.Op.Arity(); j++ {
			if int(srcs[j]) >= e.NumRegs {
				return fmt.Errorf("kernels: expr instruction %d (%s): register %d outside %d", i, in.Op, srcs[j], e.NumRegs)
			}
		}
	}
	return nil
}

// String renders the program, one instruction per line, for debugging and as
// a stable key for generated GPU source.
func (e *Expr) String() string {
	var b strings.Builder
	if e.Wide {
		b.WriteString("wide\n")
	}
	for _, in := range e.Code {
		switch in.Op.Arity() {
		case 0:
			if in.Op == ELoad {
				fmt.Fprintf(&b, "r%d = load in%d\n", in.Dst, in.A)
			} else {
				fmt.Fprintf(&b, "r%d = %g\n", in.Dst, in.Imm)
			}
		case 1:
			if in.Op == ELeakyRelu {
				fmt.Fprintf(&b, "r%d = %s(r%d, %g)\n", in.Dst, in.Op, in.A, in.Imm)
			} else {
				fmt.Fprintf(&b, "r%d = %s(r%d)\n", in.Dst, in.Op, in.A)
			}
		case 2:
			fmt.Fprintf(&b, "r%d = %s(r%d, r%d)\n", in.Dst, in.Op, in.A, in.B)
		case 3:
			fmt.Fprintf(&b, "r%d = %s(r%d, r%d, r%d)\n", in.Dst, in.Op, in.A, in.B, in.C)
		}
	}
	fmt.Fprintf(&b, "out = r%d\n", e.Result)
	return b.String()
}
