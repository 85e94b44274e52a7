package codegen

import (
	"fmt"
	"strings"
)

// printer spells nodes in one dialect and records the helpers they use.
type printer struct {
	d     Dialect
	used  map[string]bool
	err   error
	subst int // an operand spelled as the value v instead of a load (0: none)
}

func newPrinter(d Dialect) *printer { return &printer{d: d, used: map[string]bool{}} }

func (p *printer) fail(format string, args ...any) string {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
	return "?"
}

// expr spells n; operands' element indices are the variables ix<k>.
func (p *printer) expr(n *Node) string {
	if n.T == TF64 && !p.d.HasF64() {
		return p.fail("%w: %s has no double precision (a Wide expression)", ErrUnsupported, p.d)
	}
	switch n.Kind {
	case NReg:
		return fmt.Sprintf("r%d", n.Reg)
	case NLit:
		return p.d.literal(n)
	case NLoad:
		if p.subst > 0 && n.Operand == p.subst {
			return "v"
		}
		if n.Operand == 0 {
			return "out[ix0]"
		}
		return fmt.Sprintf("in%d[ix%d]", n.Operand-1, n.Operand)
	case NOp:
		return p.op(n)
	}
	return p.fail("codegen: node kind %d", n.Kind)
}

var infix = map[Fn]string{
	FAdd: "+", FSub: "-", FMul: "*", FDiv: "/",
	FLt: "<", FLe: "<=", FGt: ">", FGe: ">=", FEq: "==", FNe: "!=",
	FAnd: "&&", FOr: "||",
}

func (p *printer) op(n *Node) string {
	args := make([]string, len(n.Args))
	for i, a := range n.Args {
		args[i] = p.expr(a)
	}
	if s, ok := infix[n.Fn]; ok && len(args) == 2 {
		return "(" + args[0] + " " + s + " " + args[1] + ")"
	}
	switch n.Fn {
	case FNeg:
		return "(-" + args[0] + ")"
	case FSelect:
		return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")"
	case FCast:
		return "((" + p.d.typeName(n.T) + ")" + args[0] + ")"
	case FHalfToFloat, FFloatToHalf, FBF16ToFloat, FFloatToBF16:
		name, h := helperFn(n.Fn)
		p.used[h] = true
		return name + "(" + args[0] + ")"
	}
	name, h := p.d.mathFn(n.Fn, n.T)
	if name == "" {
		return p.fail("codegen: operation %s with %d arguments", n.Fn, len(args))
	}
	if h != "" {
		p.used[h] = true
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// Source prints the kernel in dialect d. It fails (wrapping ErrUnsupported)
// for a Wide kernel in a dialect without double precision.
func (k *Kernel) Source(d Dialect) (string, error) {
	p := newPrinter(d)
	cu := d == CUDA
	idx := k.indexType(d)
	var body strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&body, format, args...) }
	w("  const %s n = (%s)p.n;\n", idx, idx)
	if cu {
		w("  for (%s i = (%s)blockIdx.x * (%s)blockDim.x + (%s)threadIdx.x; i < n; i += (%s)blockDim.x * (%s)gridDim.x) {\n", idx, idx, idx, idx, idx, idx)
	} else {
		w("  for (%s i = (%s)gid; i < n; i += (%s)gsize) {\n", idx, idx, idx)
	}
	k.element(p, &body, idx, "    ")
	w("    out[ix0] = %s;\n", p.expr(k.Store))
	w("  }\n}\n")
	if p.err != nil {
		return "", fmt.Errorf("codegen: printing %s as %s: %w", k.Name, d, p.err)
	}

	var src strings.Builder
	src.WriteString(d.header("elementwise"))
	src.WriteString(d.prelude(p.used))
	src.WriteString(k.paramsStruct(d))
	params := k.operandParams(d, true)
	if cu {
		params = append(params, fmt.Sprintf("const %s_params p", k.Name))
		fmt.Fprintf(&src, "extern \"C\" __global__ void %s(\n    %s) {\n", k.Name, strings.Join(params, ",\n    "))
	} else {
		params = append(params, fmt.Sprintf("constant %s_params& p [[buffer(%d)]]", k.Name, len(k.Operands)),
			"uint gid [[thread_position_in_grid]]", "uint gsize [[threads_per_grid]]")
		fmt.Fprintf(&src, "kernel void %s(\n    %s) {\n", k.Name, strings.Join(params, ",\n    "))
	}
	src.WriteString(body.String())
	return src.String(), nil
}

// Epilogue prints the kernel as a function another kernel calls for one
// output element: operand from (an input, dense in the output's order) is
// the value v that caller holds in a register, where Source would load it,
// and the function returns the value Source would store at linear index i
// (the caller stores it, in the output or elsewhere). This is how a fixed
// kernel (a product) takes the elementwise step after it into its own
// stores without the intermediate tensor. The function is named
// <name>_ep<from>; its parameters are (i, v, the operand pointers as in
// Source, the parameter block), the block laid out as Source's.
func (k *Kernel) Epilogue(d Dialect, from int) (src, fn string, err error) {
	if from < 1 || from >= len(k.Operands) {
		return "", "", fmt.Errorf("codegen: %s: epilogue operand %d of %d", k.Name, from, len(k.Operands))
	}
	if op := k.Operands[from]; op.Elem != TF32 || op.Access != Linear {
		return "", "", fmt.Errorf("%w: %s: epilogue operand %d is %s %s, want dense f32", ErrUnsupported, k.Name, from, op.DTypeN, op.Access)
	}
	p := newPrinter(d)
	p.subst = from
	idx := k.indexType(d)
	var body strings.Builder
	k.element(p, &body, idx, "  ")
	fmt.Fprintf(&body, "  return %s;\n}\n", p.expr(k.Store))
	if p.err != nil {
		return "", "", fmt.Errorf("codegen: printing %s's epilogue as %s: %w", k.Name, d, p.err)
	}
	fn = fmt.Sprintf("%s_ep%d", k.Name, from)
	var b strings.Builder
	b.WriteString(d.prelude(p.used))
	b.WriteString(k.paramsStruct(d))
	params := append([]string{idx + " i", "float v"}, k.operandParams(d, false)...)
	ret := d.typeName(k.Operands[0].Elem)
	if d == CUDA {
		params = append(params, fmt.Sprintf("const %s_params& p", k.Name))
		fmt.Fprintf(&b, "static __device__ __forceinline__ %s %s(\n    %s) {\n", ret, fn, strings.Join(params, ",\n    "))
	} else {
		params = append(params, fmt.Sprintf("constant %s_params& p", k.Name))
		fmt.Fprintf(&b, "static inline %s %s(\n    %s) {\n", ret, fn, strings.Join(params, ",\n    "))
	}
	b.WriteString(body.String())
	return b.String(), fn, nil
}

// indexType is the type of element indices in dialect d.
func (k *Kernel) indexType(d Dialect) string {
	switch {
	case k.Index32:
		return d.typeName(TU32)
	case d == CUDA:
		return "long long"
	}
	return "long"
}

// element prints the work of output element i: its coordinates (if an
// operand is strided), the loaded operands' indices, the registers and
// the body, each line indented by ind. The store is the caller's.
func (k *Kernel) element(p *printer, body *strings.Builder, idx, ind string) {
	w := func(format string, args ...any) { body.WriteString(ind); fmt.Fprintf(body, format, args...) }
	// Registers the body assigns, grouped by type in first-use order.
	assigned := map[int]bool{}
	for _, s := range k.Body {
		assigned[s.Dst] = true
	}
	var order []Type
	byType := map[Type][]string{}
	for r, t := range k.Regs {
		if !assigned[r] {
			continue
		}
		if _, ok := byType[t]; !ok {
			order = append(order, t)
		}
		byType[t] = append(byType[t], fmt.Sprintf("r%d", r))
	}
	// Only the output and the operands the body loads get an index.
	loaded := map[int]bool{0: true}
	for _, s := range k.Body {
		loadsOf(s.X, loaded)
	}
	loadsOf(k.Store, loaded)
	if p.subst > 0 {
		delete(loaded, p.subst)
	}
	strided := false
	for o, op := range k.Operands {
		strided = strided || (loaded[o] && op.Access == Strided)
	}
	if strided && k.Rank > 0 {
		w("%s q = i;\n", idx)
		for d := k.Rank - 1; d >= 1; d-- {
			w("const %s c%d = q %% (%s)p.shape[%d];\n", idx, d, idx, d)
			w("q /= (%s)p.shape[%d];\n", idx, d)
		}
		w("const %s c0 = q;\n", idx)
	}
	for o, op := range k.Operands {
		if !loaded[o] {
			continue
		}
		switch op.Access {
		case Linear:
			w("const %s ix%d = (%s)p.off[%d] + i;\n", idx, o, idx, o)
		case Scalar:
			w("const %s ix%d = (%s)p.off[%d];\n", idx, o, idx, o)
		default:
			terms := []string{fmt.Sprintf("(%s)p.off[%d]", idx, o)}
			for d := 0; d < k.Rank; d++ {
				terms = append(terms, fmt.Sprintf("c%d * (%s)p.stride[%d][%d]", d, idx, o, d))
			}
			w("const %s ix%d = %s;\n", idx, o, strings.Join(terms, " + "))
		}
	}
	for _, t := range order {
		w("%s %s;\n", p.d.typeName(t), strings.Join(byType[t], ", "))
	}
	for _, s := range k.Body {
		w("r%d = %s;\n", s.Dst, p.expr(s.X))
	}
}

// paramsStruct declares the kernel's parameter block (layout in the
// package documentation).
func (k *Kernel) paramsStruct(d Dialect) string {
	var src strings.Builder
	i64 := d.typeName(TI64)
	fmt.Fprintf(&src, "struct %s_params {\n  %s n;\n", k.Name, i64)
	if k.Rank > 0 {
		fmt.Fprintf(&src, "  %s shape[%d];\n", i64, k.Rank)
	}
	fmt.Fprintf(&src, "  %s off[%d];\n", i64, len(k.Operands))
	if k.Rank > 0 {
		fmt.Fprintf(&src, "  %s stride[%d][%d];\n", i64, len(k.Operands), k.Rank)
	}
	src.WriteString("};\n")
	return src.String()
}

// operandParams spells the operand pointer parameters: out, in0, ...
// (MSL: bound to buffer slots when they are a kernel's).
func (k *Kernel) operandParams(d Dialect, entry bool) []string {
	params := make([]string, 0, len(k.Operands)+3)
	for o, op := range k.Operands {
		t := d.typeName(op.Elem)
		name := "out"
		if o > 0 {
			name = fmt.Sprintf("in%d", o-1)
			t = "const " + t
		}
		switch {
		case d == CUDA:
			params = append(params, fmt.Sprintf("%s* %s", t, name))
		case entry:
			params = append(params, fmt.Sprintf("device %s* %s [[buffer(%d)]]", t, name, o))
		default:
			params = append(params, fmt.Sprintf("device %s* %s", t, name))
		}
	}
	return params
}

// loadsOf adds the operands n loads to set.
func loadsOf(n *Node, set map[int]bool) {
	if n.Kind == NLoad {
		set[n.Operand] = true
	}
	for _, a := range n.Args {
		loadsOf(a, set)
	}
}
