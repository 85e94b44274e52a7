package codegen

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/tensorforge/forge/kernels"
)

// Limits of the generator. They bound the parameter block (CUDA passes it
// by value, at most 4 KiB; Metal's setBytes takes at most 4 KiB too).
const (
	MaxRank   = 8  // dimensions of an elementwise index space or a reduction's input
	MaxInputs = 32 // inputs of one fused step
)

// ErrUnsupported is wrapped by lowering and printing errors for steps the
// generator (or a dialect) cannot express; a backend reports such a step as
// unsupported, and the graph runs it on the host.
var ErrUnsupported = errors.New("codegen: unsupported")

// Fused is a fused step lowered for launch: its size-independent kernel and
// the coalesced views whose sizes go into the parameter block.
type Fused struct {
	Kernel *Kernel
	// Views are the step's operands after kernels.Coalesce, output first,
	// then the inputs in Step.In order: what Params packs.
	Views []kernels.View
}

// LowerFused lowers an OpFused step. The kernel depends on the expression,
// the operands' dtypes, the rank and access pattern of the coalesced index
// space, and whether indices fit in 32 bits; never on the sizes themselves.
func LowerFused(s *kernels.Step) (*Fused, error) {
	if s.Op != kernels.OpFused || s.Expr == nil {
		return nil, fmt.Errorf("%w: step %q is %s, not a fused expression", ErrUnsupported, s.Name, s.Op)
	}
	if len(s.Out) != 1 {
		return nil, fmt.Errorf("codegen: fused step %q has %d outputs, want 1", s.Name, len(s.Out))
	}
	if len(s.In) > MaxInputs {
		return nil, fmt.Errorf("%w: fused step %q has %d inputs (at most %d)", ErrUnsupported, s.Name, len(s.In), MaxInputs)
	}
	if err := s.Expr.Validate(len(s.In)); err != nil {
		return nil, fmt.Errorf("codegen: fused step %q: %w", s.Name, err)
	}
	views := make([]kernels.View, 0, 1+len(s.In))
	views = append(views, s.Out[0])
	views = append(views, s.In...)
	for i, v := range views {
		if !v.DType.Valid() {
			return nil, fmt.Errorf("codegen: fused step %q operand %d has dtype %s", s.Name, i, v.DType)
		}
		if len(v.Shape) != len(v.Strides) || !equalInts(v.Shape, s.Out[0].Shape) {
			return nil, fmt.Errorf("codegen: fused step %q operand %d has shape %v strides %v, output %v", s.Name, i, v.Shape, v.Strides, s.Out[0].Shape)
		}
	}
	cv := kernels.Coalesce(views)
	rank := len(cv[0].Shape)
	if rank > MaxRank {
		return nil, fmt.Errorf("%w: fused step %q has rank %d after coalescing (at most %d)", ErrUnsupported, s.Name, rank, MaxRank)
	}
	k := &Kernel{Rank: rank, Index32: fitsIndex32(cv)}
	for _, v := range cv {
		k.Operands = append(k.Operands, Operand{Elem: storageType(v.DType), DTypeN: v.DType.String(), Access: accessOf(v)})
	}
	lowerExpr(k, s.Expr, cv)
	k.Name = "fg_ew_" + shortHash(k.String())
	return &Fused{Kernel: k, Views: cv}, nil
}

// Len returns the number of output elements: the number of kernel threads
// the launch must cover.
func (f *Fused) Len() int { return f.Views[0].Len() }

// Params packs the kernel's parameter block for these views (layout in the
// package documentation): little-endian int64s, n, shape, offsets, strides.
func (f *Fused) Params() []byte {
	r := f.Kernel.Rank
	w := make([]int64, 0, 1+r+len(f.Views)*(1+r))
	w = append(w, int64(f.Len()))
	for _, d := range f.Views[0].Shape[:r] {
		w = append(w, int64(d))
	}
	for _, v := range f.Views {
		w = append(w, int64(v.Offset))
	}
	for _, v := range f.Views {
		for _, st := range v.Strides[:r] {
			w = append(w, int64(st))
		}
	}
	return packInt64s(w)
}

func packInt64s(w []int64) []byte {
	b := make([]byte, 8*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// fitsIndex32 reports whether every element index the kernel computes (and
// every partial sum of one) lies in [0, 2^31): strides non-negative, spans
// below 2^31.
func fitsIndex32(views []kernels.View) bool {
	const lim = math.MaxInt32
	for _, v := range views {
		if v.Len() >= lim || v.Offset < 0 {
			return false
		}
		for _, st := range v.Strides {
			if st < 0 {
				return false
			}
		}
		if _, hi := v.Span(); hi >= lim {
			return false
		}
	}
	return true
}

// accessOf classifies how a coalesced view follows the output's linear index.
func accessOf(v kernels.View) Access {
	scalar, want := true, 1
	linear := true
	for i := len(v.Shape) - 1; i >= 0; i-- {
		if v.Strides[i] != 0 && v.Shape[i] != 1 {
			scalar = false
		}
		if v.Shape[i] != 1 && v.Strides[i] != want {
			linear = false
		}
		want *= v.Shape[i]
	}
	switch {
	case scalar:
		return Scalar
	case linear:
		return Linear
	}
	return Strided
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

// storageType is the lowered type that holds one element of d.
func storageType(d kernels.DType) Type {
	switch d {
	case kernels.F32:
		return TF32
	case kernels.F16, kernels.BF16:
		return TU16
	case kernels.I32:
		return TI32
	case kernels.I64:
		return TI64
	case kernels.I8:
		return TI8
	}
	return TU8 // U8, Bool
}

// Node constructors.

func reg(r int, t Type) *Node { return &Node{Kind: NReg, Reg: r, T: t} }

// litF is a float literal of type t; an f32 literal holds the float32 value
// the register will see, so the text form says what the kernel computes.
func litF(t Type, v float64) *Node {
	if t == TF32 {
		v = float64(float32(v))
	}
	return &Node{Kind: NLit, T: t, Lit: v}
}

func litI(t Type, v int64) *Node { return &Node{Kind: NLit, T: t, Int: v} }

func op(fn Fn, t Type, args ...*Node) *Node { return &Node{Kind: NOp, Fn: fn, T: t, Args: args} }

func cast(t Type, x *Node) *Node {
	if x.T == t {
		return x
	}
	return op(FCast, t, x)
}

func sel(c, a, b *Node) *Node { return op(FSelect, a.T, c, a, b) }

func cmp(fn Fn, a, b *Node) *Node { return op(fn, TBool, a, b) }

func isNaN(x *Node) *Node { return cmp(FNe, x, x) }

// boolTo turns a condition into 1 or 0 of type t.
func boolTo(t Type, c *Node) *Node { return sel(c, litF(t, 1), litF(t, 0)) }

// loadAs converts the raw element of operand k (dtype d) to register type rt,
// exactly as kernels/cpu's loads do.
func loadAs(k int, d kernels.DType, rt Type) *Node {
	raw := &Node{Kind: NLoad, Operand: k, T: storageType(d)}
	switch d {
	case kernels.F16:
		return cast(rt, op(FHalfToFloat, TF32, raw))
	case kernels.BF16:
		return cast(rt, op(FBF16ToFloat, TF32, raw))
	}
	return cast(rt, raw)
}

// storeAs converts x (a float register value) to the storage type of d with
// kernels/cpu's store rules: floats round to nearest even (f16 and bf16 by
// way of float32, as the CPU does), integers truncate toward zero and
// saturate to int64 (NaN gives 0) before wrapping to their width, Bool
// stores 1 for non-zero.
func storeAs(x *Node, d kernels.DType) *Node {
	switch d {
	case kernels.F32:
		return cast(TF32, x)
	case kernels.F16:
		return op(FFloatToHalf, TU16, cast(TF32, x))
	case kernels.BF16:
		return op(FFloatToBF16, TU16, cast(TF32, x))
	case kernels.Bool:
		return sel(cmp(FNe, x, litF(x.T, 0)), litI(TU8, 1), litI(TU8, 0))
	}
	sat := sel(isNaN(x), litI(TI64, 0),
		sel(cmp(FGe, x, litF(x.T, 0x1p63)), litI(TI64, math.MaxInt64),
			sel(cmp(FLe, x, litF(x.T, -0x1p63)), litI(TI64, math.MinInt64), cast(TI64, x))))
	return cast(storageType(d), sat)
}

// lowerExpr appends the statements of e to k, with kernels/cpu's meaning of
// every instruction (kernels/cpu/fused.go, scalar).
func lowerExpr(k *Kernel, e *kernels.Expr, views []kernels.View) {
	rt := TF32
	if e.Wide {
		rt = TF64
	}
	for range e.NumRegs {
		k.Regs = append(k.Regs, rt)
	}
	temp := func() *Node {
		k.Regs = append(k.Regs, rt)
		return reg(len(k.Regs)-1, rt)
	}
	one, zero := litF(rt, 1), litF(rt, 0)
	for _, in := range e.Code {
		a, b, c := reg(int(in.A), rt), reg(int(in.B), rt), reg(int(in.C), rt)
		var x *Node
		switch in.Op {
		case kernels.ELoad:
			x = loadAs(1+int(in.A), views[1+in.A].DType, rt)
		case kernels.EConst:
			x = litF(rt, in.Imm)
		case kernels.ENeg:
			x = op(FNeg, rt, a)
		case kernels.EAbs:
			x = op(FAbs, rt, a)
		case kernels.EExp:
			x = op(FExp, rt, a)
		case kernels.ELog:
			x = op(FLog, rt, a)
		case kernels.ESqrt:
			x = op(FSqrt, rt, a)
		case kernels.ERsqrt:
			x = op(FDiv, rt, one, op(FSqrt, rt, a))
		case kernels.ESin:
			x = op(FSin, rt, a)
		case kernels.ECos:
			x = op(FCos, rt, a)
		case kernels.ETanh:
			x = op(FTanh, rt, a)
		case kernels.ESigmoid:
			x = op(FDiv, rt, one, op(FAdd, rt, one, op(FExp, rt, op(FNeg, rt, a))))
		case kernels.ERelu:
			x = sel(cmp(FLt, a, zero), zero, a)
		case kernels.ELeakyRelu:
			x = sel(cmp(FLt, a, zero), op(FMul, rt, a, litF(rt, in.Imm)), a)
		case kernels.EGeluErf:
			x = op(FMul, rt, op(FMul, rt, litF(rt, 0.5), a),
				op(FAdd, rt, one, op(FErf, rt, op(FMul, rt, a, litF(rt, 1/math.Sqrt2)))))
		case kernels.EGeluTanh:
			cube := op(FMul, rt, op(FMul, rt, op(FMul, rt, litF(rt, 0.044715), a), a), a)
			inner := op(FMul, rt, litF(rt, math.Sqrt(2/math.Pi)), op(FAdd, rt, a, cube))
			x = op(FMul, rt, op(FMul, rt, litF(rt, 0.5), a), op(FAdd, rt, one, op(FTanh, rt, inner)))
		case kernels.ESilu:
			x = op(FDiv, rt, a, op(FAdd, rt, one, op(FExp, rt, op(FNeg, rt, a))))
		case kernels.EErf:
			x = op(FErf, rt, a)
		case kernels.EFloor:
			x = op(FFloor, rt, a)
		case kernels.ECeil:
			x = op(FCeil, rt, a)
		case kernels.ERound:
			x = op(FRint, rt, a)
		case kernels.ETrunc:
			x = op(FTrunc, rt, a)
		case kernels.ERecip:
			x = op(FDiv, rt, one, a)
		case kernels.ESign:
			x = sel(cmp(FGt, a, zero), one, sel(cmp(FLt, a, zero), litF(rt, -1), a))
		case kernels.EIsNaN:
			x = boolTo(rt, isNaN(a))
		case kernels.ENot:
			x = boolTo(rt, cmp(FEq, a, zero))
		case kernels.ERoundF16:
			x = cast(rt, op(FHalfToFloat, TF32, op(FFloatToHalf, TU16, cast(TF32, a))))
		case kernels.ERoundBF16:
			x = cast(rt, op(FBF16ToFloat, TF32, op(FFloatToBF16, TU16, cast(TF32, a))))
		case kernels.EAdd:
			x = op(FAdd, rt, a, b)
		case kernels.ESub:
			x = op(FSub, rt, a, b)
		case kernels.EMul:
			x = op(FMul, rt, a, b)
		case kernels.EDiv:
			x = op(FDiv, rt, a, b)
		case kernels.EPow:
			x = op(FPow, rt, a, b)
		case kernels.EMax, kernels.EMin:
			x = nanMinMax(in.Op == kernels.EMax, a, b)
		case kernels.EMod:
			// Floor modulo: C's exact fmod, moved into the divisor's sign.
			t := temp()
			k.Body = append(k.Body, Stmt{Dst: t.Reg, X: op(FFmod, rt, a, b)})
			wrong := op(FAnd, TBool, cmp(FNe, t, zero), cmp(FNe, cmp(FLt, t, zero), cmp(FLt, b, zero)))
			x = sel(wrong, op(FAdd, rt, t, b), t)
		case kernels.EEq:
			x = boolTo(rt, cmp(FEq, a, b))
		case kernels.ENe:
			x = boolTo(rt, cmp(FNe, a, b))
		case kernels.ELt:
			x = boolTo(rt, cmp(FLt, a, b))
		case kernels.ELe:
			x = boolTo(rt, cmp(FLe, a, b))
		case kernels.EGt:
			x = boolTo(rt, cmp(FGt, a, b))
		case kernels.EGe:
			x = boolTo(rt, cmp(FGe, a, b))
		case kernels.EAnd:
			x = boolTo(rt, op(FAnd, TBool, cmp(FNe, a, zero), cmp(FNe, b, zero)))
		case kernels.EOr:
			x = boolTo(rt, op(FOr, TBool, cmp(FNe, a, zero), cmp(FNe, b, zero)))
		case kernels.EWhere:
			x = sel(cmp(FNe, a, zero), b, c)
		}
		k.Body = append(k.Body, Stmt{Dst: int(in.Dst), X: x})
	}
	k.Store = storeAs(reg(int(e.Result), rt), views[0].DType)
	k.Body = liveOnly(k.Body, k.Store)
}

// liveOnly drops the statements whose value nothing reads (the graph's
// programs have none, but any Expr may), so that every register a kernel
// declares is used and compilers have nothing to warn about.
func liveOnly(body []Stmt, store *Node) []Stmt {
	live := map[int]bool{}
	regsOf(store, live)
	keep := make([]bool, len(body))
	for i := len(body) - 1; i >= 0; i-- {
		s := body[i]
		if !live[s.Dst] {
			continue
		}
		keep[i] = true
		delete(live, s.Dst)
		regsOf(s.X, live)
	}
	out := body[:0]
	for i, s := range body {
		if keep[i] {
			out = append(out, s)
		}
	}
	return out
}

// regsOf adds the registers n reads to set.
func regsOf(n *Node, set map[int]bool) {
	if n.Kind == NReg {
		set[n.Reg] = true
	}
	for _, a := range n.Args {
		regsOf(a, set)
	}
}

// nanMinMax is torch.maximum/minimum as kernels/cpu computes it (NaN if
// either is NaN, else Go's math.Max/Min, whose max(+0, −0) is +0 and
// min(+0, −0) is −0). On equal operands 1/a < 0 tells −0 from +0; for
// non-zero equal operands either is the answer.
func nanMinMax(isMax bool, a, b *Node) *Node {
	rt := a.T
	nan := litF(rt, math.NaN())
	negZeroA := cmp(FLt, op(FDiv, rt, litF(rt, 1), a), litF(rt, 0))
	if isMax {
		return sel(op(FOr, TBool, isNaN(a), isNaN(b)), nan,
			sel(cmp(FGt, a, b), a, sel(cmp(FLt, a, b), b, sel(negZeroA, b, a))))
	}
	return sel(op(FOr, TBool, isNaN(a), isNaN(b)), nan,
		sel(cmp(FLt, a, b), a, sel(cmp(FGt, a, b), b, sel(negZeroA, a, b))))
}
