package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// Fusing a run's weight-only int8 products with their neighbours.
//
// A transformer decoder step is a long chain of small launches: per layer
// a layer norm, the products that read it, an elementwise step after each
// product (bias, query scale, GELU, residual add) and the key/value cache
// updates. Each launch costs a few microseconds of fixed overhead however
// little it does, which at one token per step is most of the step. When
// the caller says the intermediate tensors are not read after the run
// (kernels.FusingPlanner), a product takes in, as one generated kernel:
//   - the layer norm before it: each block normalizes the product's few
//     rows into shared memory (row_norm_rows, the same sums as
//     forge_layer_norm), and the norm's launch goes;
//   - the elementwise step after it: codegen's Epilogue of that step is
//     called on each output the product computes, and its result stored
//     where the step would have stored it;
//   - a slice update of the result into a cache: the store goes into the
//     cache row at the position the update would have used.
// Each merge keeps the arithmetic of the steps it replaces, so results are
// the unfused run's.

// Limits of the merged forms.
const (
	// fuseMaxRows: the norm prologue keeps every row of the product's input
	// in each block's shared memory, so only short products (decoder
	// steps, a few sequences) take it.
	fuseMaxRows = 8
	// fuseMaxShared bounds that staging (a block gets 48 KiB without
	// asking for more).
	fuseMaxShared = 32 << 10
)

// fusedLinear is an int8 product launched with the steps merged into it.
type fusedLinear struct {
	lin  int // the product's step
	norm int // the layer norm step it normalizes its input with, or -1
	ep   int // the elementwise step applied to its outputs, or -1
	from int // the operand of ep that is the product's output (1 + input index)
	upd  int // the slice update its results go into, or -1

	fn     driver.Function
	grid   uint32
	shared uint32
	epf    *codegen.Fused // ep lowered, for its pointers and parameters
	params []byte
}

// steps lists the step indices the launch replaces, in order.
func (f *fusedLinear) steps() []int {
	var s []int
	for _, i := range []int{f.norm, f.lin, f.ep, f.upd} {
		if i >= 0 {
			s = append(s, i)
		}
	}
	return s
}

// fuse finds the merges in steps: for each product it can merge, its
// fusedLinear, and for every step a merge replaces, whether it is launched
// inside another (so not on its own). Norms are decided first: a product
// that normalizes its own input reads the norm's input, not the norm's
// output, which changes what its stores may overwrite.
func fuse(steps []kernels.Step, readAfter func(kernels.View) bool) (lins map[int]*fusedLinear, merged []bool) {
	lins = map[int]*fusedLinear{}
	merged = make([]bool, len(steps))
	normOf := map[int]int{}
	for l := range steps {
		if steps[l].Op != kernels.OpLayerNorm {
			continue
		}
		if consumers, ok := normConsumers(steps, l, readAfter); ok {
			for _, c := range consumers {
				normOf[c] = l
			}
			merged[l] = true
		}
	}
	for i := range steps {
		lin := &steps[i]
		if lin.Op != kernels.OpLinearQ || merged[i] || !dense(lin.In[0]) || lin.Out[0].DType != kernels.F32 || !dense(lin.Out[0]) {
			continue
		}
		f := &fusedLinear{lin: i, norm: -1, ep: -1, upd: -1}
		reads := []kernels.View{lin.In[0]}
		if l, ok := normOf[i]; ok {
			f.norm, reads = l, steps[l].In
		}
		out, last := lin.Out[0], i
		if j := i + 1; j < len(steps) && steps[j].Op == kernels.OpFused {
			if from, ok := epilogueOperand(steps, i, j, readAfter); ok {
				f.ep, f.from, out, last = j, from, steps[j].Out[0], j
			}
		}
		if u := last + 1; u < len(steps) && updatable(steps, out, u, readAfter) {
			f.upd, out = u, steps[u].Out[0]
		}
		// Warps store while other blocks still read the inputs: the
		// stores must not land on them.
		for _, v := range reads {
			if overlaps(out, v) {
				f.ep, f.upd = -1, -1
			}
		}
		if f.norm < 0 && f.ep < 0 && f.upd < 0 {
			continue
		}
		lins[i] = f
		for _, k := range f.steps() {
			merged[k] = k != i
		}
	}
	return lins, merged
}

// epilogueOperand reports which operand of elementwise step j reads all of
// product i's output, element for element, when that output is needed by
// nothing else and merging cannot race (j's store must not land on what
// the product still reads).
func epilogueOperand(steps []kernels.Step, i, j int, readAfter func(kernels.View) bool) (int, bool) {
	lin, ep := &steps[i], &steps[j]
	o := lin.Out[0]
	if o.Slot != 0 || ep.Out[0].Len() != o.Len() || !dense(ep.Out[0]) {
		return 0, false
	}
	from := 0
	for k, v := range ep.In {
		switch {
		case v.Slot == o.Slot && v.Offset == o.Offset && v.DType == kernels.F32 && v.Len() == o.Len() && dense(v):
			if from != 0 {
				return 0, false
			}
			from = 1 + k
		case overlaps(v, o):
			return 0, false
		}
	}
	if from == 0 || !deadAfter(steps, j, o, readAfter) {
		return 0, false
	}
	for k, v := range ep.In {
		if 1+k != from && overlaps(v, ep.Out[0]) && !sameView(v, ep.Out[0]) {
			return 0, false
		}
	}
	f, err := codegen.LowerFused(ep)
	if err != nil || f.Kernel.Operands[from].Access != codegen.Linear || f.Kernel.Operands[0].Access != codegen.Linear {
		return 0, false
	}
	return from, true
}

// updatable reports whether step u is a slice update of exactly src (a
// dense float32 intermediate nothing else needs) into a dense float32
// tensor.
func updatable(steps []kernels.Step, src kernels.View, u int, readAfter func(kernels.View) bool) bool {
	s := &steps[u]
	if s.Op != kernels.OpSliceUpdate || src.Slot != 0 || src.DType != kernels.F32 {
		return false
	}
	in, dst := s.In[0], s.Out[0]
	if !sameView(in, src) && !(in.Slot == src.Slot && in.Offset == src.Offset && in.Len() == src.Len() && dense(in)) {
		return false
	}
	if dst.DType != kernels.F32 || !dense(dst) || overlaps(dst, src) || s.In[1].Len() != 1 {
		return false
	}
	return deadAfter(steps, u, src, readAfter)
}

// normConsumers returns the products that read layer norm l's output, when
// they are the only readers and each can normalize its own input: l
// normalizes the last axis of a few dense rows, and nothing writes the
// norm's input, weight or bias before the last of them has run.
func normConsumers(steps []kernels.Step, l int, readAfter func(kernels.View) bool) ([]int, bool) {
	s := &steps[l]
	a, ok := s.Attr.(kernels.NormAttr)
	x, y := s.In[0], s.Out[0]
	if !ok || a.Axis != len(x.Shape)-1 || !dense(x) || !dense(y) || y.Slot != 0 || x.Len() == 0 {
		return nil, false
	}
	k := x.Shape[len(x.Shape)-1]
	rows := x.Len() / k
	if rows > fuseMaxRows || rows*k*4 > fuseMaxShared {
		return nil, false
	}
	var consumers []int
	ok = followReads(steps, l, y, readAfter, func(t int, v kernels.View) bool {
		st := &steps[t]
		if st.Op != kernels.OpLinearQ || !dense(st.Out[0]) || st.Out[0].DType != kernels.F32 || v.Slot != y.Slot || v.Offset != y.Offset || v.Len() != y.Len() || len(v.Shape) != 2 || v.Shape[1] != k || !dense(v) {
			return false
		}
		if len(consumers) == 0 || consumers[len(consumers)-1] != t {
			consumers = append(consumers, t)
		}
		return true
	})
	if !ok || len(consumers) == 0 {
		return nil, false
	}
	// Consumers read the norm's input, weight and bias when they run, so
	// nothing up to the last of them may write those.
	lastC := consumers[len(consumers)-1]
	for t := l + 1; t <= lastC; t++ {
		for _, v := range s.In {
			if writes(&steps[t], v) {
				return nil, false
			}
		}
	}
	return consumers, true
}

// deadAfter reports whether the elements of v written by step at are read
// by nothing after it.
func deadAfter(steps []kernels.Step, at int, v kernels.View, readAfter func(kernels.View) bool) bool {
	return followReads(steps, at, v, readAfter, func(int, kernels.View) bool { return false })
}

// followReads follows the bytes of v that step at wrote through the steps
// after it, until later steps have written them all over, calling read for
// each input that reads some of them (read returning false stops it, and
// it returns false). At the end of the run, the bytes still left must not
// be readAfter.
func followReads(steps []kernels.Step, at int, v kernels.View, readAfter func(kernels.View) bool, read func(t int, u kernels.View) bool) bool {
	lo, hi := byteSpan(v)
	left := []span{{v.Slot, lo, hi}}
	for t := at + 1; t < len(steps) && len(left) > 0; t++ {
		for _, u := range steps[t].In {
			ulo, uhi := byteSpan(u)
			for _, sp := range left {
				if u.Slot == sp.slot && ulo < sp.hi && sp.lo < uhi && u.Len() > 0 {
					if !read(t, u) {
						return false
					}
					break
				}
			}
		}
		if steps[t].Op == kernels.OpSliceUpdate {
			continue // writes a window of its output only
		}
		for _, o := range steps[t].Out {
			if o.Slot == v.Slot && dense(o) {
				olo, ohi := byteSpan(o)
				left = cut(left, olo, ohi)
			}
		}
	}
	for _, sp := range left {
		sz := max(v.DType.Size(), 1)
		if readAfter(kernels.View{Slot: sp.slot, Offset: sp.lo / sz, DType: v.DType, Shape: []int{(sp.hi - sp.lo) / sz}, Strides: []int{1}}) {
			return false
		}
	}
	return true
}

// span is a byte range [lo, hi) of the buffer in one slot.
type span struct{ slot, lo, hi int }

// cut removes [lo, hi) from the spans.
func cut(spans []span, lo, hi int) []span {
	var out []span
	for _, s := range spans {
		if hi <= s.lo || lo >= s.hi {
			out = append(out, s)
			continue
		}
		if s.lo < lo {
			out = append(out, span{s.slot, s.lo, lo})
		}
		if hi < s.hi {
			out = append(out, span{s.slot, hi, s.hi})
		}
	}
	return out
}

// writes reports whether step s may write any of v's elements.
func writes(s *kernels.Step, v kernels.View) bool {
	for _, o := range s.Out {
		if overlaps(o, v) {
			return true
		}
	}
	return false
}

// overlaps reports whether two views may share bytes.
func overlaps(a, b kernels.View) bool {
	if a.Slot != b.Slot || a.Len() == 0 || b.Len() == 0 {
		return false
	}
	alo, ahi := byteSpan(a)
	blo, bhi := byteSpan(b)
	return alo < bhi && blo < ahi
}

// byteSpan is the byte range a view's elements lie in.
func byteSpan(v kernels.View) (lo, hi int) {
	lo, hi = v.Span()
	sz := max(v.DType.Size(), 1)
	return lo * sz, hi * sz
}

// dense reports whether v's elements are contiguous in row-major order.
func dense(v kernels.View) bool {
	want := 1
	for i := len(v.Shape) - 1; i >= 0; i-- {
		if v.Shape[i] != 1 && v.Strides[i] != want {
			return false
		}
		want *= v.Shape[i]
	}
	return true
}

// sameView reports whether two views are the same elements in the same
// order.
func sameView(a, b kernels.View) bool {
	if a.Slot != b.Slot || a.Offset != b.Offset || a.DType != b.DType || len(a.Shape) != len(b.Shape) {
		return false
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] || (a.Shape[i] != 1 && a.Strides[i] != b.Strides[i]) {
			return false
		}
	}
	return true
}

// prepare generates and compiles the merged kernel.
func (f *fusedLinear) prepare(b *Backend, steps []kernels.Step) error {
	name, src, err := f.source(steps)
	if err != nil {
		return err
	}
	fn, err := b.mods.function(name, src)
	if err != nil {
		return err
	}
	f.fn = fn
	lin := &steps[f.lin]
	f.grid = min(blocks(int64(lin.In[1].Shape[0])*32, 256), uint32(b.info.SMs*8))
	if f.norm >= 0 {
		f.shared = uint32(lin.In[0].Len() * 4)
	}
	return nil
}

// source generates the merged kernel: its name and CUDA source. The name
// is a hash of what it merges (the epilogue's name hashes the elementwise
// step's lowered form), never of sizes, so alike layers share one kernel.
func (f *fusedLinear) source(steps []kernels.Step) (name, source string, err error) {
	var src strings.Builder
	src.WriteString(commonSource)
	var desc strings.Builder
	fmt.Fprintf(&desc, "linear_q norm=%v upd=%v", f.norm >= 0, f.upd >= 0)
	epFn, idx := "", "long long"
	if f.ep >= 0 {
		ef, err := codegen.LowerFused(&steps[f.ep])
		if err != nil {
			return "", "", err
		}
		epSrc, fn, err := ef.Kernel.Epilogue(codegen.CUDA, f.from)
		if err != nil {
			return "", "", err
		}
		f.epf, f.params, epFn = ef, ef.Params(), fn
		if ef.Kernel.Index32 {
			idx = "unsigned int"
		}
		src.WriteString(epSrc)
		fmt.Fprintf(&desc, " ep=%s", fn)
	}
	h := sha256.Sum256([]byte(desc.String()))
	name = "fl_" + hex.EncodeToString(h[:8])

	params := []string{"const float* x", "const void* w", "const float* scale", "const void* zero", "float* y", "int M", "int N", "int K", "int isSigned",
		"const float* lnw", "const float* lnb", "float eps", "const void* start", "int start64", "int* err", "long long dim", "long long rows"}
	if f.epf != nil {
		for o, op := range f.epf.Kernel.Operands {
			t := codegen.CUDA.TypeName(op.Elem)
			if o == 0 {
				params = append(params, t+"* out")
			} else {
				params = append(params, fmt.Sprintf("const %s* in%d", t, o-1))
			}
		}
		params = append(params, fmt.Sprintf("const %s_params p", f.epf.Kernel.Name))
	}
	fmt.Fprintf(&src, "extern \"C\" __global__ void %s(%s) {\n", name, strings.Join(params, ", "))
	if f.upd >= 0 {
		// Checked before anything is written, as forge_slice_update does.
		src.WriteString("\tconst i64 s0 = index_at(start, start64, 0);\n")
		src.WriteString("\tif (s0 < 0 || s0 + rows > dim) {\n\t\tif (blockIdx.x == 0 && threadIdx.x == 0) fail(err, 2);\n\t\treturn;\n\t}\n")
	}
	if f.norm >= 0 {
		src.WriteString("\textern __shared__ float4 fl_rows[];\n\t__shared__ double sd[32];\n")
		src.WriteString("\trow_norm_rows(x, lnw, lnb, (float*)fl_rows, M, K, eps, sd);\n\tx = (const float*)fl_rows;\n")
	}
	src.WriteString("\tlinear_q_core(x, w, scale, zero, M, N, K, isSigned, [&](int m, int n, float v) {\n")
	val := "v"
	if f.epf != nil {
		args := []string{fmt.Sprintf("(%s)((i64)m * N + n)", idx), "v", "out"}
		for o := 1; o < len(f.epf.Kernel.Operands); o++ {
			args = append(args, fmt.Sprintf("in%d", o-1))
		}
		args = append(args, "p")
		fmt.Fprintf(&src, "\t\tconst auto r = %s(%s);\n", epFn, strings.Join(args, ", "))
		val = "r"
	}
	switch {
	case f.upd >= 0:
		fmt.Fprintf(&src, "\t\ty[((i64)(m / rows) * dim + s0 + m %% rows) * N + n] = %s;\n", val)
	case f.epf != nil:
		fmt.Fprintf(&src, "\t\tout[p.off[0] + (i64)m * N + n] = %s;\n", val)
	default:
		fmt.Fprintf(&src, "\t\ty[(i64)m * N + n] = %s;\n", val)
	}
	src.WriteString("\t});\n}\n")
	return name, src.String(), nil
}

// launch runs the merged kernel.
func (f *fusedLinear) launch(q *queue, steps []kernels.Step, bufs []kernels.Buffer) error {
	lin := &steps[f.lin]
	x, w := lin.In[0], lin.In[1]
	M, K, N := x.Shape[0], x.Shape[1], w.Shape[0]
	if M*N == 0 {
		return nil
	}
	q.b.dispatches.Add(1)
	args := q.args.Reset()
	var lnw, lnb driver.DevicePtr
	eps := float32(0)
	if f.norm >= 0 {
		s := &steps[f.norm]
		args.Ptr(ptr(bufs, s.In[0]))
		lnw, lnb, eps = optPtr(s, bufs, 1), optPtr(s, bufs, 2), s.Attr.(kernels.NormAttr).Eps
	} else {
		args.Ptr(ptr(bufs, x))
	}
	args.Ptr(ptr(bufs, w)).Ptr(ptr(bufs, lin.In[2])).Ptr(ptr(bufs, lin.In[3]))
	var start driver.DevicePtr
	start64 := false
	var dim, rows int64
	switch {
	case f.upd >= 0:
		u := &steps[f.upd]
		ax := u.Attr.(kernels.AxisAttr).Axis
		_, d, inner := splitAxis(u.Out[0].Shape, ax)
		if inner != N {
			return fmt.Errorf("cuda: merged update of %d columns into rows of %d", N, inner)
		}
		args.Ptr(ptr(bufs, u.Out[0]))
		start, start64 = ptr(bufs, u.In[1]), u.In[1].DType == kernels.I64
		dim, rows = int64(d), int64(u.In[0].Shape[ax])
	case f.epf != nil:
		args.Ptr(0)
	default:
		args.Ptr(ptr(bufs, lin.Out[0]))
	}
	args.I32(int32(M)).I32(int32(N)).I32(int32(K)).I32(b2i(w.DType == kernels.I8))
	args.Ptr(lnw).Ptr(lnb).F32(eps).Ptr(start).I32(b2i(start64)).Ptr(q.errDev).I64(dim).I64(rows)
	if f.epf != nil {
		for _, v := range f.epf.Views {
			args.Ptr(base(bufs, v))
		}
		args.Bytes(f.params)
	}
	return q.b.drv.Launch(f.fn, driver.Dim3{X: f.grid}, driver.Dim3{X: 256}, f.shared, q.stream, args)
}

// profileKey names the merged launch in profiles.
func (f *fusedLinear) profileKey(steps []kernels.Step) string {
	var parts []string
	for _, i := range f.steps() {
		parts = append(parts, steps[i].Op.String())
	}
	return strings.Join(parts, "+") + fmt.Sprint(steps[f.lin].Out[0].Shape)
}
