package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
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
//     cache row at the position the update would have used;
//   - the combine of a split attention before it (forge_attention_combine,
//     a launch of its own): each block reduces the attention's partial
//     results into shared memory (combine_row), and the attention leaves
//     its output unwritten.
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

// fusedLinear is an int8 product with the steps merged into it: one part
// of a linGroup.
type fusedLinear struct {
	lin  int // the product's step
	norm int // the layer norm step it normalizes its input with, or -1
	comb int // the split attention step whose partial results it combines into its input, or -1
	ep   int // the elementwise step applied to its outputs, or -1
	from int // the operand of ep that is the product's output (1 + input index)
	upd  int // the slice update its results go into, or -1

	epf    *codegen.Fused // ep lowered, for its pointers and parameters
	params []byte
}

// linGroup is one launch: products that read the same input (the same
// norm's input, or the same tensor), each with its merged steps, their
// columns spread over one grid. A decoder layer's query, key and value
// products are one group: each is a few microseconds of latency for a
// trickle of work, so three in one grid cost about one.
type linGroup struct {
	parts []*fusedLinear

	fn     driver.Function
	grid   uint32
	shared uint32
}

// fuseMaxParts bounds a group (its kernel's parameters grow with it).
const fuseMaxParts = 4

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

// fuse finds the merges in steps: the groups, by the step of their first
// product, and for every step, whether a group launches it (so it
// is not launched on its own). Norms are decided first: a product that
// normalizes its own input reads the norm's input, not the norm's output,
// which changes what its stores may overwrite.
func fuse(steps []kernels.Step, readAfter func(kernels.View) bool) (groups map[int]*linGroup, merged []bool) {
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
	var parts []*fusedLinear
	for i := range steps {
		lin := &steps[i]
		if lin.Op != kernels.OpLinearQ || merged[i] || !dense(lin.In[0]) || lin.Out[0].DType != kernels.F32 || !dense(lin.Out[0]) || lin.In[0].Shape[0] >= linearQGEMMRows {
			continue // (many rows: linearQ)
		}
		f := &fusedLinear{lin: i, norm: -1, ep: -1, upd: -1, comb: -1}
		if l, ok := normOf[i]; ok {
			f.norm = l
		} else if i > 0 && combinable(steps, i-1, i, readAfter) {
			f.comb = i - 1
		}
		out, last := lin.Out[0], i
		if j := i + 1; j < len(steps) && steps[j].Op == kernels.OpFused {
			if from, ok := epilogueOperand(steps, i, j, readAfter); ok {
				f.ep, f.from, out, last = j, from, steps[j].Out[0], j
			}
		}
		if u := last + 1; u < len(steps) && updatable(steps, out, u, readAfter) {
			f.upd = u
		}
		// Warps store while other blocks still read the inputs: the
		// stores must not land on them.
		for _, v := range f.reads(steps) {
			if overlaps(f.target(steps), v) {
				f.ep, f.upd = -1, -1
			}
		}
		for _, k := range f.steps() {
			merged[k] = k != i
		}
		parts = append(parts, f)
	}
	groups = map[int]*linGroup{}
	var g *linGroup
	for _, f := range parts {
		if g != nil && g.admits(steps, f) {
			g.parts = append(g.parts, f)
			merged[f.lin] = true
			continue
		}
		// Launched where its first product ran: a norm merged into it
		// reads an input nothing has written since the norm's place.
		g = &linGroup{parts: []*fusedLinear{f}}
		groups[f.lin] = g
	}
	for k, g := range groups {
		if f := g.parts[0]; len(g.parts) == 1 && f.norm < 0 && f.ep < 0 && f.upd < 0 {
			delete(groups, k) // nothing merged: the plain kernel
		}
	}
	return groups, merged
}

// reads lists what part f reads while it runs (constants included).
func (f *fusedLinear) reads(steps []kernels.Step) []kernels.View {
	lin := &steps[f.lin]
	r := append([]kernels.View(nil), lin.In[1:]...)
	switch {
	case f.norm >= 0:
		r = append(r, steps[f.norm].In...)
	case f.comb < 0: // a combined input is never written: its partials are in the scratch
		r = append(r, lin.In[0])
	}
	if f.ep >= 0 {
		for k, v := range steps[f.ep].In {
			if 1+k != f.from {
				r = append(r, v)
			}
		}
	}
	if f.upd >= 0 {
		r = append(r, steps[f.upd].In[1])
	}
	return r
}

// target is where part f stores.
func (f *fusedLinear) target(steps []kernels.Step) kernels.View {
	switch {
	case f.upd >= 0:
		return steps[f.upd].Out[0]
	case f.ep >= 0:
		return steps[f.ep].Out[0]
	}
	return steps[f.lin].Out[0]
}

// last is the last step part f replaces.
func (f *fusedLinear) last() int { s := f.steps(); return s[len(s)-1] }

// admits reports whether part f can join group g: it comes right after
// g's last step, reads the same input the same way, and no part's stores
// land on what another part reads or stores (the parts' columns run in no
// particular order).
func (g *linGroup) admits(steps []kernels.Step, f *fusedLinear) bool {
	p := g.parts[0]
	prev := g.parts[len(g.parts)-1]
	if len(g.parts) >= fuseMaxParts || f.lin != prev.last()+1 || (f.norm >= 0) != (p.norm >= 0) || f.comb >= 0 || p.comb >= 0 {
		return false
	}
	if f.norm >= 0 {
		if f.norm != p.norm {
			return false
		}
	} else if !sameView(steps[f.lin].In[0], steps[p.lin].In[0]) {
		return false
	}
	for _, q := range g.parts {
		if overlaps(f.target(steps), q.target(steps)) {
			return false
		}
		for _, v := range q.reads(steps) {
			if overlaps(f.target(steps), v) {
				return false
			}
		}
		for _, v := range f.reads(steps) {
			if overlaps(q.target(steps), v) {
				return false
			}
		}
	}
	return true
}

// steps lists the step indices the group's launch replaces, in order.
func (g *linGroup) steps() []int {
	var s []int
	for _, f := range g.parts {
		for _, k := range f.steps() {
			if !slices.Contains(s, k) {
				s = append(s, k)
			}
		}
	}
	return s
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

// combinable reports whether product i may take in the combine of
// attention step a before it: a decoder step split over blocks
// (forge_attention_decode, then forge_attention_combine) whose output is
// exactly the product's input, dense, and read by nothing after the
// product. The product's blocks then reduce the partial results into
// shared memory themselves (combine_row) and the combine's launch goes:
// the cross-attention's output projection in a Whisper decoder step.
func combinable(steps []kernels.Step, a, i int, readAfter func(kernels.View) bool) bool {
	att, x := &steps[a], steps[i].In[0]
	if att.Op != kernels.OpAttention || decodeSplits(att) < 2 {
		return false
	}
	o := att.Out[0]
	return dense(o) && dense(x) && o.Slot == x.Slot && o.Offset == x.Offset && o.DType == kernels.F32 && o.Len() == x.Len() &&
		o.Len()*4 <= fuseMaxShared && deadAfter(steps, i, o, readAfter)
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

// prepare sets up the group's launch with its compiled kernel (the
// function of g.source's program).
func (g *linGroup) prepare(b *Backend, steps []kernels.Step, fn driver.Function) error {
	g.fn = fn
	cols := 0
	for _, f := range g.parts {
		cols += steps[f.lin].In[1].Shape[0]
	}
	if f := g.parts[0]; f.norm >= 0 || f.comb >= 0 {
		g.shared = uint32(steps[f.lin].In[0].Len() * 4)
	}
	// A warp a column, but no more blocks than run at once: each block
	// normalizes the rows again, and a wide product's warps go on to
	// their next columns (linear_q_sweep) sooner than a second wave of
	// blocks would start.
	var per int
	if err := b.th.Do(func() error {
		var err error
		per, err = b.drv.OccupancyMaxActiveBlocks(fn, 256, int(g.shared))
		return err
	}); err != nil {
		return fmt.Errorf("cuda: occupancy of the merged product: %w", err)
	}
	g.grid = min(blocks(int64(cols)*32, 256), uint32(b.info.SMs*max(per, 1)))
	return nil
}

// source generates the group's kernel: its name and CUDA source. The name
// is a hash of what it merges (an epilogue's name hashes its elementwise
// step's lowered form), never of sizes, so alike layers share one kernel.
func (g *linGroup) source(steps []kernels.Step) (name, source string, err error) {
	var src, body, fetch strings.Builder
	src.WriteString(commonSource)
	desc := fmt.Sprintf("linear_q group norm=%v comb=%v", g.parts[0].norm >= 0, g.parts[0].comb >= 0)
	params := []string{"const float* x", "int M", "int K", "const float* lnw", "const float* lnb", "float eps", "int* err"}
	seen := map[string]bool{}
	w := func(format string, args ...any) { fmt.Fprintf(&body, format, args...) }
	col := "c"
	for k, f := range g.parts {
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
			if !seen[fn] {
				seen[fn] = true
				src.WriteString(epSrc)
			}
		}
		desc += fmt.Sprintf(" | upd=%v ep=%s", f.upd >= 0, epFn)
		params = append(params, fmt.Sprintf("const void* w%d", k), fmt.Sprintf("const float* scale%d", k), fmt.Sprintf("const void* zero%d", k),
			fmt.Sprintf("float* y%d", k), fmt.Sprintf("int N%d", k), fmt.Sprintf("int isSigned%d", k),
			fmt.Sprintf("const void* start%d", k), fmt.Sprintf("int start64_%d", k), fmt.Sprintf("long long dim%d", k), fmt.Sprintf("long long rows%d", k))
		var epArgs []string
		if f.epf != nil {
			for o, op := range f.epf.Kernel.Operands {
				t := codegen.CUDA.TypeName(op.Elem)
				if o == 0 {
					params = append(params, fmt.Sprintf("%s* out%d_", t, k))
				} else {
					params = append(params, fmt.Sprintf("const %s* in%d_%d", t, k, o-1))
				}
				epArgs = append(epArgs, fmt.Sprintf("in%d_%d", k, o-1))
			}
			epArgs[0] = fmt.Sprintf("out%d_", k)
			params = append(params, fmt.Sprintf("const %s_params p%d", f.epf.Kernel.Name, k))
		}
		// Part k's columns.
		if k > 0 {
			w("\t\t%s -= N%d;\n", col, k-1)
			fmt.Fprintf(&fetch, "\t\t%s -= N%d;\n", col, k-1)
		}
		fmt.Fprintf(&fetch, "\t\tif (%s < N%d) return linear_q_fetch(q%d, K, %s);\n", col, k, k, col)
		w("\t\tif (%s < N%d) {\n", col, k)
		w("\t\t\tlinear_q_column(x, q%d, M, K, %s, pre, ahead, [&](int m, int n, float v) {\n", k, col)
		val := "v"
		if f.epf != nil {
			args := append([]string{fmt.Sprintf("(%s)((i64)m * N%d + n)", idx, k), "v"}, epArgs...)
			args = append(args, fmt.Sprintf("p%d", k))
			w("\t\t\t\tconst auto r = %s(%s);\n", epFn, strings.Join(args, ", "))
			val = "r"
		}
		switch {
		case f.upd >= 0:
			w("\t\t\t\ty%d[((i64)(m / rows%d) * dim%d + s%d + m %% rows%d) * N%d + n] = %s;\n", k, k, k, k, k, k, val)
		case f.epf != nil:
			w("\t\t\t\tout%d_[p%d.off[0] + (i64)m * N%d + n] = %s;\n", k, k, k, val)
		default:
			w("\t\t\t\ty%d[(i64)m * N%d + n] = %s;\n", k, k, val)
		}
		w("\t\t\t});\n\t\t\treturn;\n\t\t}\n")
	}
	h := sha256.Sum256([]byte(desc))
	name = "fl_" + hex.EncodeToString(h[:8])

	// early: the products' weights, scales and zero points are constants,
	// so their first loads go before the wait for the kernel before
	// (ready), which the backend may launch this one beside.
	comb := g.parts[0].comb >= 0
	if comb {
		params = append(params, "const float* part", "int prows", "int psplits", "int pdv")
	}
	params = append(params, "int early")
	fmt.Fprintf(&src, "extern \"C\" __global__ void %s(%s) {\n", name, strings.Join(params, ", "))
	src.WriteString("\tconst float* xin = x;\n")
	var ready strings.Builder
	ready.WriteString("\tauto ready = [&]() -> bool {\n\t\twait_inputs();\n")
	for k, f := range g.parts {
		if f.upd >= 0 {
			// Checked before anything is written, as forge_slice_update does.
			fmt.Fprintf(&src, "\ti64 s%d = 0;\n", k)
			fmt.Fprintf(&ready, "\t\ts%d = index_at(start%d, start64_%d, 0);\n", k, k, k)
			fmt.Fprintf(&ready, "\t\tif (s%d < 0 || s%d + rows%d > dim%d) {\n\t\t\tif (blockIdx.x == 0 && threadIdx.x == 0) fail(err, 2);\n\t\t\treturn false;\n\t\t}\n", k, k, k, k)
		}
	}
	if g.parts[0].norm >= 0 || comb {
		// The prologue's rows, which the products then read.
		src.WriteString("\textern __shared__ float4 fl_rows[];\n\tx = (const float*)fl_rows;\n")
	}
	if g.parts[0].norm >= 0 {
		src.WriteString("\t__shared__ double sd[32];\n")
		ready.WriteString("\t\trow_norm_rows(xin, lnw, lnb, (float*)fl_rows, M, K, eps, sd);\n")
	}
	if comb {
		src.WriteString("\t__shared__ float fl_wz[8][ATT_MAX_SPLITS];\n")
		ready.WriteString("\t\tfor (int r = threadIdx.x >> 5; r < prows; r += blockDim.x >> 5)\n")
		ready.WriteString("\t\t\tcombine_row(part + (i64)r * psplits * (pdv + 2), psplits, pdv, (float*)fl_rows + (i64)r * pdv, fl_wz[threadIdx.x >> 5]);\n")
		ready.WriteString("\t\t__syncthreads();\n")
	}
	ready.WriteString("\t\treturn true;\n\t};\n")
	src.WriteString(ready.String())
	src.WriteString("\tif (!early && !ready()) return;\n")
	total := make([]string, len(g.parts))
	ahead := []string{"K <= 512"}
	for k := range g.parts {
		fmt.Fprintf(&src, "\tconst linear_q_weights q%d = linear_q_prepare(x, w%d, scale%d, zero%d, K, isSigned%d);\n", k, k, k, k, k)
		total[k] = fmt.Sprintf("N%d", k)
		ahead = append(ahead, fmt.Sprintf("q%d.vec", k))
	}
	fmt.Fprintf(&src, "\tauto fetch = [&](int c) -> uint4 {\n%s\t\treturn make_uint4(0, 0, 0, 0);\n\t};\n", fetch.String())
	fmt.Fprintf(&src, "\tauto column = [&](int c, uint4 pre, bool ahead) {\n%s\t};\n", body.String())
	fmt.Fprintf(&src, "\tlinear_q_sweep(%s, %s, fetch, column, [&] { return !early || ready(); });\n}\n", strings.Join(total, " + "), strings.Join(ahead, " && "))
	return name, src.String(), nil
}

// launch runs the group's kernel.
func (g *linGroup) launch(q *queue, steps []kernels.Step, bufs []kernels.Buffer) error {
	p0 := &steps[g.parts[0].lin]
	x := p0.In[0]
	M, K := x.Shape[0], x.Shape[1]
	if M == 0 {
		return nil
	}
	q.b.dispatches.Add(1)
	args := q.args.Reset()
	var lnw, lnb driver.DevicePtr
	eps := float32(0)
	if f := g.parts[0]; f.norm >= 0 {
		s := &steps[f.norm]
		args.Ptr(ptr(bufs, s.In[0]))
		lnw, lnb, eps = optPtr(s, bufs, 1), optPtr(s, bufs, 2), s.Attr.(kernels.NormAttr).Eps
	} else {
		args.Ptr(ptr(bufs, x))
	}
	args.I32(int32(M)).I32(int32(K)).Ptr(lnw).Ptr(lnb).F32(eps).Ptr(q.errDev)
	for _, f := range g.parts {
		lin := &steps[f.lin]
		w := lin.In[1]
		N := w.Shape[0]
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
		args.I32(int32(N)).I32(b2i(w.DType == kernels.I8)).Ptr(start).I32(b2i(start64)).I64(dim).I64(rows)
		if f.epf != nil {
			for _, v := range f.epf.Views {
				args.Ptr(base(bufs, v))
			}
			args.Bytes(f.params)
		}
	}
	early := true
	for _, f := range g.parts {
		for _, v := range steps[f.lin].In[1:4] {
			early = early && bufs[v.Slot].(*buffer).wrapped
		}
	}
	if f := g.parts[0]; f.comb >= 0 {
		att := &steps[f.comb]
		dv := att.Out[0].Shape[len(att.Out[0].Shape)-1]
		args.Ptr(q.scratch.ptr).I32(int32(att.Out[0].Len() / dv)).I32(int32(decodeSplits(att))).I32(int32(dv))
	}
	args.I32(b2i(early))
	return q.launchWaiting(g.fn, driver.Dim3{X: g.grid}, driver.Dim3{X: 256}, g.shared, args)
}

// profileKey names the group's launch in profiles.
func (g *linGroup) profileKey(steps []kernels.Step) string {
	var parts []string
	for _, f := range g.parts {
		var ops []string
		if f.comb >= 0 {
			ops = append(ops, "attention combine")
		}
		for _, i := range f.steps() {
			ops = append(ops, steps[i].Op.String())
		}
		parts = append(parts, strings.Join(ops, "+")+fmt.Sprint(steps[f.lin].Out[0].Shape))
	}
	return strings.Join(parts, " | ")
}
