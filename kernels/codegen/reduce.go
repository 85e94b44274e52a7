package codegen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tensorforge/forge/kernels"
)

// ReduceThreads is the number of threads of a reduction's thread block
// (CUDA) or threadgroup (Metal): every block-per-output reduction kernel
// must be launched with exactly this many, since its block-wide tree is
// sized for it.
const ReduceThreads = 256

// PerThreadMaxCount is the largest number of elements per output that a
// reduction reduces with one thread per output (ReduceKernel.PerThread):
// below it a block of ReduceThreads would leave most threads idle.
const PerThreadMaxCount = 64

// ReduceKernel is the lowered form of one OpReduce step: one output element
// per thread block, whose threads stride over the reduced elements and
// combine their partial results in a tree.
type ReduceKernel struct {
	Name     string // "fg_red_" + 16 hex digits of the text form's hash
	Kind     kernels.ReduceKind
	In, Out  Operand
	KeptRank int  // dimensions indexing the outputs (coalesced)
	RedRank  int  // dimensions indexing one output's reduced elements (coalesced)
	Acc      Type // accumulator: f64 where the dialect has it, else f32
	Index32  bool
	// PerThread: each thread reduces one output alone, in kernels/cpu's
	// order (chosen when count ≤ PerThreadMaxCount); else one block of
	// ReduceThreads per output.
	PerThread bool
	// Load converts the raw input element (operand 1) to Acc.
	Load *Node
	// Store is the value written to the output element: a function of r0
	// (the Acc result) or, for ArgMax/ArgMin, r1 (the i64 index).
	Store *Node
}

var reduceNames = [...]string{"sum", "mean", "max", "min", "prod", "argmax", "argmin", "var"}

func reduceName(k kernels.ReduceKind) string {
	if int(k) < len(reduceNames) {
		return reduceNames[k]
	}
	return fmt.Sprintf("reduce(%d)", uint8(k))
}

// String renders the kernel in the neutral text form, the input of its
// name hash.
func (k *ReduceKernel) String() string {
	return fmt.Sprintf("reduce %s kept=%d red=%d acc=%s index32=%t perthread=%t\nin %s %s\nout %s %s\nload %s\nstore %s\n",
		reduceName(k.Kind), k.KeptRank, k.RedRank, k.Acc, k.Index32, k.PerThread, k.In.DTypeN, k.In.Elem, k.Out.DTypeN, k.Out.Elem, k.Load, k.Store)
}

// Reduction is an OpReduce step lowered for launch.
type Reduction struct {
	Kernel *ReduceKernel
	// Outputs is the number of output elements (thread blocks to cover).
	Outputs int
	params  []int64
}

// Params packs the kernel's parameter block (layout in the package
// documentation).
func (r *Reduction) Params() []byte { return packInt64s(r.params) }

// LowerReduce lowers an OpReduce step for dialect d (which decides the
// accumulator's precision). The output view must be dense, as the graph
// makes it.
func LowerReduce(s *kernels.Step, d Dialect) (*Reduction, error) {
	attr, ok := s.Attr.(kernels.ReduceAttr)
	if s.Op != kernels.OpReduce || !ok {
		return nil, fmt.Errorf("%w: step %q is %s with %T, not a reduction", ErrUnsupported, s.Name, s.Op, s.Attr)
	}
	if len(s.In) != 1 || len(s.Out) != 1 {
		return nil, fmt.Errorf("codegen: reduce step %q has %d inputs and %d outputs, want 1 and 1", s.Name, len(s.In), len(s.Out))
	}
	in, out := s.In[0], s.Out[0]
	if !in.DType.Valid() || !out.DType.Valid() || attr.Kind > kernels.ReduceVar {
		return nil, fmt.Errorf("codegen: reduce step %q: dtypes %s→%s, kind %d", s.Name, in.DType, out.DType, attr.Kind)
	}
	if len(in.Shape) != len(in.Strides) || len(in.Shape) > MaxRank {
		return nil, fmt.Errorf("%w: reduce step %q input rank %d (at most %d)", ErrUnsupported, s.Name, len(in.Shape), MaxRank)
	}
	var kShape, kStride, rShape, rStride []int
	count, nOut := 1, 1
	for i, n := range in.Shape {
		if slices.Contains(attr.Axes, i) {
			rShape, rStride = append(rShape, n), append(rStride, in.Strides[i])
			count *= n
		} else {
			kShape, kStride = append(kShape, n), append(kStride, in.Strides[i])
			nOut *= n
		}
	}
	if out.Len() != nOut || !out.Contiguous() {
		return nil, fmt.Errorf("%w: reduce step %q output %v strides %v is not a dense array of %d elements", ErrUnsupported, s.Name, out.Shape, out.Strides, nOut)
	}
	kShape, kStride = mergeDims(kShape, kStride)
	rShape, rStride = mergeDims(rShape, rStride)
	acc := TF32
	if d.HasF64() {
		acc = TF64
	}
	k := &ReduceKernel{
		Kind:      attr.Kind,
		In:        Operand{Elem: storageType(in.DType), DTypeN: in.DType.String(), Access: Strided},
		Out:       Operand{Elem: storageType(out.DType), DTypeN: out.DType.String(), Access: Linear},
		KeptRank:  len(kShape),
		RedRank:   len(rShape),
		Acc:       acc,
		Index32:   fitsIndex32([]kernels.View{in, out}) && count < 1<<31,
		PerThread: count <= PerThreadMaxCount,
		Load:      loadAs(1, in.DType, acc),
	}
	switch attr.Kind {
	case kernels.ReduceArgMax, kernels.ReduceArgMin:
		if out.DType == kernels.I64 {
			k.Store = reg(1, TI64)
		} else {
			k.Store = storeAs(cast(acc, reg(1, TI64)), out.DType)
		}
	default:
		k.Store = storeAs(reg(0, acc), out.DType)
	}
	k.Name = "fg_red_" + shortHash(k.String())
	p := []int64{int64(nOut), int64(count), int64(attr.Correction), int64(in.Offset), int64(out.Offset)}
	for _, l := range [][]int{kShape, kStride, rShape, rStride} {
		for _, x := range l {
			p = append(p, int64(x))
		}
	}
	return &Reduction{Kernel: k, Outputs: nOut, params: p}, nil
}

// mergeDims drops extent-1 dimensions and merges neighbours that walk
// memory as one (outer stride = inner stride × inner extent), keeping the
// row-major order of the elements (argmax indices depend on it).
func mergeDims(shape, stride []int) ([]int, []int) {
	var s, st []int
	for i, n := range shape {
		if n == 1 {
			continue
		}
		if l := len(s) - 1; l >= 0 && st[l] == stride[i]*n {
			s[l] *= n
			st[l] = stride[i]
			continue
		}
		s, st = append(s, n), append(st, stride[i])
	}
	return s, st
}

// selects reports whether the kind picks an element (by value, with its
// index breaking ties) rather than accumulating.
func selects(k kernels.ReduceKind) bool {
	return k == kernels.ReduceMax || k == kernels.ReduceMin || k == kernels.ReduceArgMax || k == kernels.ReduceArgMin
}

// Source prints the reduction in dialect d. It must be printed in the
// dialect it was lowered for (the accumulator's precision is chosen then).
func (k *ReduceKernel) Source(d Dialect) (string, error) {
	if k.Acc == TF64 && !d.HasF64() {
		return "", fmt.Errorf("codegen: printing %s as %s: %w: lowered with a double accumulator", k.Name, d, ErrUnsupported)
	}
	p := newPrinter(d)
	cu := d == CUDA
	idx := d.typeName(TI64)
	if k.Index32 {
		idx = d.typeName(TU32)
	}
	i64, acc := d.typeName(TI64), d.typeName(k.Acc)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	shared, barrier, qual := "__shared__", "__syncthreads()", "static __device__ __forceinline__"
	if !cu {
		shared, barrier, qual = "threadgroup", "threadgroup_barrier(mem_flags::mem_threadgroup)", "static inline"
	}
	sel := selects(k.Kind)
	zero, one := p.d.literal(litF(k.Acc, 0)), p.d.literal(litF(k.Acc, 1))
	pt := k.PerThread
	switch {
	case pt && cu:
		w("  for (%s o = (%s)blockIdx.x * blockDim.x + threadIdx.x; o < p.n_out; o += (%s)blockDim.x * gridDim.x) {\n", i64, i64, i64)
	case pt:
		w("  for (%s o = gid; o < p.n_out; o += gsize) {\n", i64)
	default:
		w("  %s %s sh_v[%d];\n", shared, acc, ReduceThreads)
		if sel {
			w("  %s %s sh_i[%d];\n", shared, i64, ReduceThreads)
		}
		if cu {
			w("  const unsigned int tid = threadIdx.x;\n")
			w("  for (%s o = blockIdx.x; o < p.n_out; o += gridDim.x) {\n", i64)
		} else {
			w("  for (%s o = group; o < p.n_out; o += ngroups) {\n", i64)
		}
	}
	w("    %s base = (%s)p.in_off;\n", idx, idx)
	if k.KeptRank > 0 {
		w("    %s q = (%s)o;\n", idx, idx)
		for dd := k.KeptRank - 1; dd >= 1; dd-- {
			w("    base += (q %% (%s)p.kshape[%d]) * (%s)p.kstride[%d];\n    q /= (%s)p.kshape[%d];\n", idx, dd, idx, dd, idx, dd)
		}
		w("    base += q * (%s)p.kstride[0];\n", idx)
	}
	w("    const %s count = (%s)p.count;\n", idx, idx)
	// The pass over elements tid, tid+T, ... (0, 1, ... per thread): ix1
	// is the element's index, r its position among the reduced elements.
	pass := func(bodyLines ...string) {
		if pt {
			w("    for (%s r = 0; r < count; r++) {\n", idx)
		} else {
			w("    for (%s r = tid; r < count; r += %d) {\n", idx, ReduceThreads)
		}
		if k.RedRank > 0 {
			w("      %s ix1 = base;\n", idx)
			if k.RedRank > 1 {
				w("      %s q = r;\n", idx)
				for dd := k.RedRank - 1; dd >= 1; dd-- {
					w("      ix1 += (q %% (%s)p.rshape[%d]) * (%s)p.rstride[%d];\n      q /= (%s)p.rshape[%d];\n", idx, dd, idx, dd, idx, dd)
				}
				w("      ix1 += q * (%s)p.rstride[0];\n", idx)
			} else {
				w("      ix1 += r * (%s)p.rstride[0];\n", idx)
			}
		} else {
			w("      const %s ix1 = base;\n", idx)
		}
		w("      const %s x = %s;\n", acc, p.expr(k.Load))
		for _, l := range bodyLines {
			w("      %s\n", l)
		}
		w("    }\n")
	}
	// tree combines sh_v (and sh_i) across the block into element 0.
	tree := func(combine string) {
		if pt {
			return
		}
		w("    %s;\n", barrier)
		w("    for (unsigned int s = %d; s > 0; s >>= 1) {\n", ReduceThreads/2)
		w("      if (tid < s) { %s }\n", combine)
		w("      %s;\n    }\n", barrier)
	}
	// share publishes a thread's partial result for the tree; result is
	// the combined one.
	share := func(v string) {
		if !pt {
			w("    sh_v[tid] = %s;\n", v)
		}
	}
	result := func(v string) string {
		if pt {
			return v
		}
		return "sh_v[0]"
	}
	helper := ""
	switch {
	case sel:
		cmpOp := ">"
		if k.Kind == kernels.ReduceMin || k.Kind == kernels.ReduceArgMin {
			cmpOp = "<"
		}
		// fg_better orders (value, index) pairs: NaN first (the earliest
		// NaN), then the larger (smaller) value, then the smaller index;
		// index -1 is "no element". This is kernels/cpu's sequential scan
		// (first NaN, else first extreme), made order-independent.
		helper = fmt.Sprintf(`// fg_better_%[1]s reports whether (x, xi) beats (b, bi) in this reduction's order.
%[2]s bool fg_better_%[1]s(%[3]s x, %[4]s xi, %[3]s b, %[4]s bi) {
  if (xi < 0) return false;
  if (bi < 0) return true;
  if (b != b) return x != x && xi < bi;
  if (x != x) return true;
  return x %[5]s b || (x == b && xi < bi);
}
`, k.Name, qual, acc, i64, cmpOp)
		w("    %s best = %s;\n    %s bi = -1;\n", acc, zero, i64)
		pass(fmt.Sprintf("if (fg_better_%s(x, (%s)r, best, bi)) { best = x; bi = (%s)r; }", k.Name, i64, i64))
		if !pt {
			w("    sh_v[tid] = best;\n    sh_i[tid] = bi;\n")
		}
		tree(fmt.Sprintf("if (fg_better_%s(sh_v[tid + s], sh_i[tid + s], sh_v[tid], sh_i[tid])) { sh_v[tid] = sh_v[tid + s]; sh_i[tid] = sh_i[tid + s]; }", k.Name))
		used := map[int]bool{}
		regsOf(k.Store, used)
		v, i := "sh_v[0]", "sh_i[0]"
		if pt {
			v, i = "best", "bi"
		}
		if used[0] {
			w("    %s r0 = %s;\n", acc, v)
		}
		if used[1] {
			w("    %s r1 = %s < 0 ? 0 : %s;\n", i64, i, i)
		}
	case k.Kind == kernels.ReduceProd:
		w("    %s a = %s;\n", acc, one)
		pass("a *= x;")
		share("a")
		tree("sh_v[tid] *= sh_v[tid + s];")
		w("    %s r0 = %s;\n", acc, result("a"))
	default: // sum, mean, var
		w("    %s a = %s;\n", acc, zero)
		pass("a += x;")
		share("a")
		tree("sh_v[tid] += sh_v[tid + s];")
		w("    %s r0 = %s;\n", acc, result("a"))
		if k.Kind == kernels.ReduceMean || k.Kind == kernels.ReduceVar {
			w("    r0 = r0 / (%s)p.count;\n", acc)
		}
		if k.Kind == kernels.ReduceVar {
			// Second pass around the mean, as kernels/cpu does for accuracy.
			if !pt {
				w("    %s;\n", barrier)
			}
			w("    const %s mean = r0;\n    a = %s;\n", acc, zero)
			pass("const "+acc+" dx = x - mean;", "a += dx * dx;")
			share("a")
			tree("sh_v[tid] += sh_v[tid + s];")
			w("    r0 = %s / (%s)(p.count - p.correction);\n", result("a"), acc)
		}
	}
	if pt {
		w("    out[p.out_off + o] = %s;\n  }\n}\n", p.expr(k.Store))
	} else {
		w("    if (tid == 0) out[p.out_off + o] = %s;\n", p.expr(k.Store))
		w("    %s;\n  }\n}\n", barrier) // sh_v[0] is read by all before the next output reuses it
	}
	if p.err != nil {
		return "", fmt.Errorf("codegen: printing %s as %s: %w", k.Name, d, p.err)
	}

	var src strings.Builder
	src.WriteString(d.header("reduction " + reduceName(k.Kind)))
	src.WriteString(d.prelude(p.used))
	src.WriteString(helper)
	fmt.Fprintf(&src, "struct %s_params {\n  %s n_out;\n  %s count;\n  %s correction;\n  %s in_off;\n  %s out_off;\n", k.Name, i64, i64, i64, i64, i64)
	if k.KeptRank > 0 {
		fmt.Fprintf(&src, "  %s kshape[%d];\n  %s kstride[%d];\n", i64, k.KeptRank, i64, k.KeptRank)
	}
	if k.RedRank > 0 {
		fmt.Fprintf(&src, "  %s rshape[%d];\n  %s rstride[%d];\n", i64, k.RedRank, i64, k.RedRank)
	}
	src.WriteString("};\n")
	outT, inT := d.typeName(k.Out.Elem), d.typeName(k.In.Elem)
	switch {
	case pt && cu:
		fmt.Fprintf(&src, "extern \"C\" __global__ void %s(\n    %s* out,\n    const %s* in0,\n    const %s_params p) {\n", k.Name, outT, inT, k.Name)
	case pt:
		fmt.Fprintf(&src, "kernel void %s(\n    device %s* out [[buffer(0)]],\n    device const %s* in0 [[buffer(1)]],\n    constant %s_params& p [[buffer(2)]],\n"+
			"    uint gid [[thread_position_in_grid]],\n    uint gsize [[threads_per_grid]]) {\n", k.Name, outT, inT, k.Name)
	case cu:
		fmt.Fprintf(&src, "extern \"C\" __global__ void __launch_bounds__(%d) %s(\n    %s* out,\n    const %s* in0,\n    const %s_params p) {\n",
			ReduceThreads, k.Name, outT, inT, k.Name)
	default:
		fmt.Fprintf(&src, "kernel void %s(\n    device %s* out [[buffer(0)]],\n    device const %s* in0 [[buffer(1)]],\n    constant %s_params& p [[buffer(2)]],\n"+
			"    uint tid [[thread_position_in_threadgroup]],\n    uint group [[threadgroup_position_in_grid]],\n    uint ngroups [[threadgroups_per_grid]]) {\n",
			k.Name, outT, inT, k.Name)
	}
	src.WriteString(b.String())
	return src.String(), nil
}
