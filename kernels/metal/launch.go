package metal

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
)

// fixedSource is the hand-written kernels' MSL (kernels.metal): compiled
// once per backend into one library.
//
//go:embed kernels.metal
var fixedSource string

// FixedSource returns the MSL of the hand-written kernels, for tools that
// compile it elsewhere.
func FixedSource() string { return fixedSource }

// fixedThreads is FK_THREADS in kernels.metal: every hand-written kernel
// runs threadgroups of this many threads.
const fixedThreads = 128

// Dispatch limits. Kernels loop over their work (grid-stride), so capping
// the grid changes only how the work is spread.
const (
	maxGroups  = 1 << 16 // threadgroups of one dispatch
	maxThreads = 1 << 22 // threads of one dispatchThreads
	ewGroup    = 256     // threadgroup size of elementwise and per-thread reduction kernels
)

// launch is one step made ready for Metal, independent of the device: the
// kernel, its parameter block, the buffers it binds and the grid. The
// darwin backend encodes it; the tests run the same launch on the CPU
// through the MSL shim, so what a Mac dispatches is what Linux checks.
type launch struct {
	fn  string // kernel function name
	src string // the generated library's MSL; "" for the hand-written library
	// slots are the buffer-table slots bound, in order, from buffer index
	// firstBuf; each is bound at its element 0 (offsets are in params).
	slots    []int
	firstBuf int
	params   []byte
	paramIx  int
	// The grid: threads > 0 is dispatchThreads(threads, group), else
	// dispatchThreadgroups(groups, group).
	threads, groups, group int
}

// errEmpty is prepare's answer for a step with no work: nothing to launch.
var errEmpty = errors.New("metal: nothing to launch")

// prepare turns a step into its launch, or fails (wrapping
// codegen.ErrUnsupported) when the backend has no kernel for it: the
// answer of Supports.
func prepare(s *kernels.Step) (*launch, error) {
	switch s.Op {
	case kernels.OpFused:
		f, err := codegen.LowerFused(s)
		if err != nil {
			return nil, err
		}
		src, err := f.Kernel.Source(codegen.MSL)
		if err != nil {
			return nil, err
		}
		l := &launch{fn: f.Kernel.Name, src: src, params: f.Params(), paramIx: len(f.Views), group: ewGroup}
		for _, v := range f.Views {
			l.slots = append(l.slots, v.Slot)
		}
		l.threads = min(f.Len(), maxThreads)
		if f.Len() == 0 {
			return l, errEmpty
		}
		return l, nil
	case kernels.OpReduce:
		r, err := codegen.LowerReduce(s, codegen.MSL)
		if err != nil {
			return nil, err
		}
		src, err := r.Kernel.Source(codegen.MSL)
		if err != nil {
			return nil, err
		}
		l := &launch{fn: r.Kernel.Name, src: src, params: r.Params(), paramIx: 2, slots: []int{s.Out[0].Slot, s.In[0].Slot}}
		if r.Kernel.PerThread {
			l.threads, l.group = min(r.Outputs, maxThreads), ewGroup
		} else {
			l.groups, l.group = min(r.Outputs, maxGroups), codegen.ReduceThreads
		}
		if r.Outputs == 0 {
			return l, errEmpty
		}
		return l, nil
	}
	p, ok := fixedOps[s.Op]
	if !ok {
		return nil, fmt.Errorf("%w: no Metal kernel for %s", codegen.ErrUnsupported, s.Op)
	}
	for _, v := range append(append([]kernels.View(nil), s.In...), s.Out...) {
		if len(v.Shape) != len(v.Strides) {
			return nil, fmt.Errorf("metal: step %q: a view's shape %v and strides %v differ in rank", s.Name, v.Shape, v.Strides)
		}
	}
	l := &launch{fn: "fk_" + s.Op.String(), paramIx: 0, firstBuf: 1, group: fixedThreads}
	work, err := p(s, l)
	if err != nil {
		return nil, fmt.Errorf("%w: %s step %q: %v", codegen.ErrUnsupported, s.Op, s.Name, err)
	}
	l.groups = max(1, min(work, maxGroups))
	if work == 0 {
		return l, errEmpty
	}
	return l, nil
}

// fixedOps fill a hand-written kernel's launch (parameters and buffers)
// and return its number of threadgroups' worth of work; an error says why
// the kernel does not handle the step.
var fixedOps = map[kernels.Op]func(*kernels.Step, *launch) (int, error){
	kernels.OpMatMul:      prepMatMul,
	kernels.OpAttention:   prepAttention,
	kernels.OpSoftmax:     prepSoftmax,
	kernels.OpLayerNorm:   prepLayerNorm,
	kernels.OpGroupNorm:   prepGroupNorm,
	kernels.OpConv1d:      prepConv1d,
	kernels.OpLSTM:        prepLSTM,
	kernels.OpGather:      prepGather,
	kernels.OpSliceUpdate: prepSliceUpdate,
	kernels.OpCumsum:      prepCumsum,
}

// paramBlock packs a kernel's parameters: longs, then floats, as the
// kernels' structs lay them out.
type paramBlock struct{ b []byte }

func (p *paramBlock) ints(vs ...int) {
	for _, v := range vs {
		p.b = binary.LittleEndian.AppendUint64(p.b, uint64(int64(v)))
	}
}

func (p *paramBlock) float(v float32) {
	p.b = binary.LittleEndian.AppendUint32(p.b, math.Float32bits(v))
}

// bytes returns the block padded to 8 bytes (the struct's alignment).
func (p *paramBlock) bytes() []byte {
	for len(p.b)%8 != 0 {
		p.b = append(p.b, 0)
	}
	return p.b
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func allF32(vs ...kernels.View) bool {
	for _, v := range vs {
		if v.DType != kernels.F32 {
			return false
		}
	}
	return true
}

func dense(vs ...kernels.View) bool {
	for _, v := range vs {
		if !v.Contiguous() {
			return false
		}
	}
	return true
}

func prod(xs []int) int {
	n := 1
	for _, x := range xs {
		n *= x
	}
	return n
}

// maxBatchRank is the number of batch axes the product kernels take.
const maxBatchRank = 4

// batchAxes packs the batch axes of out (all but the last two) with the
// strides of each operand along them, zero-padded to maxBatchRank.
func batchAxes(p *paramBlock, out kernels.View, ops ...kernels.View) (int, error) {
	nb := len(out.Shape) - 2
	if nb > maxBatchRank {
		return 0, fmt.Errorf("%d batch axes (at most %d)", nb, maxBatchRank)
	}
	for _, o := range ops {
		if len(o.Shape) != len(out.Shape) {
			return 0, fmt.Errorf("operand of rank %d, output of rank %d", len(o.Shape), len(out.Shape))
		}
	}
	pad := func(xs []int) []int { return append(append([]int(nil), xs...), make([]int, maxBatchRank-len(xs))...) }
	p.ints(prod(out.Shape[:nb]), nb)
	p.ints(pad(out.Shape[:nb])...)
	for _, o := range ops {
		p.ints(pad(o.Strides[:nb])...)
	}
	return nb, nil
}

func prepMatMul(s *kernels.Step, l *launch) (int, error) {
	if len(s.In) < 2 || len(s.Out) != 1 || !allF32(s.In...) || !allF32(s.Out...) {
		return 0, errors.New("wants f32 a, b, [bias] and one output")
	}
	a, b, out := s.In[0], s.In[1], s.Out[0]
	r := len(out.Shape)
	if r < 2 || !dense(out) {
		return 0, errors.New("wants a dense output of rank 2 or more")
	}
	m, n, k := out.Shape[r-2], out.Shape[r-1], a.Shape[len(a.Shape)-1]
	var p paramBlock
	p.ints(m, n, k)
	if _, err := batchAxes(&p, out, a, b); err != nil {
		return 0, err
	}
	p.ints(a.Strides[r-2], a.Strides[r-1], b.Strides[r-2], b.Strides[r-1], a.Offset, b.Offset, out.Offset)
	bias := b
	if len(s.In) > 2 {
		bias = s.In[2]
	}
	p.ints(b2i(len(s.In) > 2), bias.Offset)
	l.params = p.bytes()
	l.slots = []int{out.Slot, a.Slot, b.Slot, bias.Slot}
	return prod(out.Shape[:r-2]) * ((m + 31) / 32) * ((n + 31) / 32), nil
}

func prepAttention(s *kernels.Step, l *launch) (int, error) {
	if len(s.In) < 3 || len(s.Out) != 1 || !allF32(s.In...) || !allF32(s.Out...) {
		return 0, errors.New("wants f32 q, k, v, [mask]")
	}
	q, k, v, out := s.In[0], s.In[1], s.In[2], s.Out[0]
	r := len(out.Shape)
	if r < 2 || !dense(out) {
		return 0, errors.New("wants a dense output of rank 2 or more")
	}
	n, d, keys, dv := q.Shape[r-2], q.Shape[r-1], k.Shape[r-2], v.Shape[r-1]
	if d > 128 || dv > fixedThreads {
		return 0, fmt.Errorf("head sizes %d and %d (at most 128)", d, dv)
	}
	// A mask's [n, s] rows are dense; its batch strides (zero for an [n, s]
	// mask the batch shares) follow q's, k's and v's.
	mask := kernels.View{Slot: q.Slot, Shape: q.Shape, Strides: make([]int, r)}
	if len(s.In) > 3 {
		m := s.In[3]
		mr := len(m.Shape)
		if (mr != 2 && mr != r) || m.Strides[mr-2] != keys || m.Strides[mr-1] != 1 {
			return 0, errors.New("wants a mask of dense [n, s] rows, [n, s] or with the output's batch axes")
		}
		mask = m
		if mr == 2 {
			mask.Shape, mask.Strides = out.Shape, append(make([]int, r-2), m.Strides...)
		}
	}
	var p paramBlock
	p.ints(n, keys, d, dv)
	if _, err := batchAxes(&p, out, q, k, v, mask); err != nil {
		return 0, err
	}
	p.ints(q.Strides[r-2], q.Strides[r-1], k.Strides[r-2], k.Strides[r-1], v.Strides[r-2], v.Strides[r-1],
		q.Offset, k.Offset, v.Offset, out.Offset, b2i(len(s.In) > 3), mask.Offset)
	l.params = p.bytes()
	l.slots = []int{out.Slot, q.Slot, k.Slot, v.Slot, mask.Slot}
	return prod(out.Shape[:r-2]) * n, nil
}

// axisSplit is kernels/cpu's splitAxis: the extents before, at and after
// an axis.
func axisSplit(shape []int, axis int) (outer, n, inner int, err error) {
	if axis < 0 || axis >= len(shape) {
		return 0, 0, 0, fmt.Errorf("axis %d of a rank-%d view", axis, len(shape))
	}
	return prod(shape[:axis]), shape[axis], prod(shape[axis+1:]), nil
}

func prepSoftmax(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.SoftmaxAttr)
	if !ok || len(s.In) != 1 || len(s.Out) != 1 || !allF32(s.In[0], s.Out[0]) || !dense(s.In[0], s.Out[0]) {
		return 0, errors.New("wants dense f32 operands and SoftmaxAttr")
	}
	outer, n, inner, err := axisSplit(s.In[0].Shape, a.Axis)
	if err != nil {
		return 0, err
	}
	var p paramBlock
	p.ints(s.In[0].Offset, s.Out[0].Offset, outer*inner, n, inner, b2i(a.Log))
	l.params = p.bytes()
	l.slots = []int{s.Out[0].Slot, s.In[0].Slot}
	return outer * inner * min(n, 1), nil
}

// normOperands returns x, weight, bias (x standing in for those absent)
// and the output of a norm step.
func normOperands(s *kernels.Step) (x, w, b, out kernels.View, hasW, hasB bool, err error) {
	if len(s.In) < 1 || len(s.In) > 3 || len(s.Out) != 1 || !allF32(s.In...) || !allF32(s.Out...) || !dense(s.In...) || !dense(s.Out...) {
		return x, w, b, out, false, false, errors.New("wants dense f32 x, [weight, bias]")
	}
	x, w, b, out = s.In[0], s.In[0], s.In[0], s.Out[0]
	if len(s.In) > 1 {
		w, hasW = s.In[1], true
	}
	if len(s.In) > 2 {
		b, hasB = s.In[2], true
	}
	return x, w, b, out, hasW, hasB, nil
}

func prepLayerNorm(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.NormAttr)
	x, w, b, out, hasW, hasB, err := normOperands(s)
	if err != nil || !ok || a.Axis < 0 || a.Axis > len(x.Shape) {
		return 0, fmt.Errorf("wants NormAttr and dense f32 operands (%v)", err)
	}
	rows, n := prod(x.Shape[:a.Axis]), prod(x.Shape[a.Axis:])
	var p paramBlock
	p.ints(x.Offset, out.Offset, w.Offset, b.Offset, rows, n, b2i(hasW), b2i(hasB))
	p.float(a.Eps)
	l.params = p.bytes()
	l.slots = []int{out.Slot, x.Slot, w.Slot, b.Slot}
	return rows * min(n, 1), nil
}

func prepGroupNorm(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.NormAttr)
	x, w, b, out, hasW, hasB, err := normOperands(s)
	if err != nil || !ok || len(x.Shape) < 2 || a.Groups <= 0 || x.Shape[1]%a.Groups != 0 {
		return 0, fmt.Errorf("wants NormAttr with groups dividing the channels of a dense [N, C, ...] f32 x (%v)", err)
	}
	N, C, L := x.Shape[0], x.Shape[1], prod(x.Shape[2:])
	var p paramBlock
	p.ints(x.Offset, out.Offset, w.Offset, b.Offset, N, C, L, a.Groups, b2i(hasW), b2i(hasB))
	p.float(a.Eps)
	l.params = p.bytes()
	l.slots = []int{out.Slot, x.Slot, w.Slot, b.Slot}
	return N * a.Groups * min(C*L, 1), nil
}

func prepConv1d(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.ConvAttr)
	if !ok || len(s.In) < 2 || len(s.Out) != 1 || !allF32(s.In...) || !allF32(s.Out...) || !dense(s.In...) || !dense(s.Out...) {
		return 0, errors.New("wants dense f32 x, w, [bias] and ConvAttr")
	}
	x, w, out := s.In[0], s.In[1], s.Out[0]
	if len(x.Shape) != 3 || len(w.Shape) != 3 || len(out.Shape) != 3 || a.Groups <= 0 || a.Stride <= 0 || a.Dilation <= 0 {
		return 0, errors.New("wants [N, C, L] operands, positive groups, stride and dilation")
	}
	bias := x
	if len(s.In) > 2 {
		bias = s.In[2]
	}
	var p paramBlock
	p.ints(x.Shape[0], x.Shape[1], x.Shape[2], w.Shape[0], w.Shape[2], out.Shape[2], a.Stride, a.PadLeft, a.Dilation, a.Groups,
		x.Offset, w.Offset, out.Offset, b2i(len(s.In) > 2), bias.Offset)
	l.params = p.bytes()
	l.slots = []int{out.Slot, x.Slot, w.Slot, bias.Slot}
	return (out.Len() + fixedThreads - 1) / fixedThreads, nil
}

// maxLSTMHidden is the hidden size fk_lstm's threadgroup arrays hold.
const maxLSTMHidden = 512

func prepLSTM(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.LSTMAttr)
	D := 1
	if a.Bidirectional {
		D = 2
	}
	if !ok || len(s.In) != 3+4*D || len(s.Out) != 3 || !allF32(s.In...) || !allF32(s.Out...) || !dense(s.In...) || !dense(s.Out...) {
		return 0, errors.New("wants dense f32 operands and LSTMAttr")
	}
	if a.Hidden <= 0 || a.Hidden > maxLSTMHidden || len(s.In[0].Shape) != 3 {
		return 0, fmt.Errorf("hidden size %d (at most %d), x of rank 3", a.Hidden, maxLSTMHidden)
	}
	x := s.In[0]
	T, B, I := x.Shape[0], x.Shape[1], x.Shape[2]
	if a.BatchFirst {
		T, B = B, T
	}
	h0, c0 := s.In[1+4*D], s.In[2+4*D]
	y, hn, cn := s.Out[0], s.Out[1], s.Out[2]
	var p paramBlock
	p.ints(T, B, I, a.Hidden, D, b2i(a.BatchFirst), x.Offset, y.Offset, hn.Offset, cn.Offset, h0.Offset, c0.Offset)
	w := func(d, k int) kernels.View { return s.In[1+4*min(d, D-1)+k] }
	for k := range 4 {
		p.ints(w(0, k).Offset, w(1, k).Offset)
	}
	l.params = p.bytes()
	l.slots = []int{y.Slot, hn.Slot, cn.Slot, x.Slot, h0.Slot, c0.Slot}
	for d := range 2 {
		for k := range 4 {
			l.slots = append(l.slots, w(d, k).Slot)
		}
	}
	return D * B, nil
}

func isIndex(v kernels.View) bool { return v.DType == kernels.I32 || v.DType == kernels.I64 }

func prepGather(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.AxisAttr)
	if !ok || len(s.In) != 2 || len(s.Out) != 1 || !isIndex(s.In[1]) || !dense(s.In...) || !dense(s.Out...) || s.In[0].DType != s.Out[0].DType {
		return 0, errors.New("wants dense data, i32/i64 indices and AxisAttr")
	}
	d, idx, out := s.In[0], s.In[1], s.Out[0]
	outer, dim, inner, err := axisSplit(d.Shape, a.Axis)
	if err != nil {
		return 0, err
	}
	es := d.DType.Size()
	var p paramBlock
	p.ints(outer, dim, inner, idx.Len(), es, d.Offset, out.Offset, idx.Offset, b2i(idx.DType == kernels.I64))
	l.params = p.bytes()
	l.slots = []int{out.Slot, d.Slot, idx.Slot}
	return (outer*idx.Len()*inner*es + fixedThreads - 1) / fixedThreads, nil
}

func prepSliceUpdate(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.AxisAttr)
	if !ok || len(s.In) != 2 || len(s.Out) != 1 || !isIndex(s.In[1]) || !dense(s.In[0], s.Out[0]) || s.In[0].DType != s.Out[0].DType {
		return 0, errors.New("wants dense src and destination, an i32/i64 start and AxisAttr")
	}
	src, start, dst := s.In[0], s.In[1], s.Out[0]
	outer, dim, inner, err := axisSplit(dst.Shape, a.Axis)
	if err != nil || len(src.Shape) != len(dst.Shape) {
		return 0, fmt.Errorf("src and destination ranks differ (%v)", err)
	}
	if start.Len() != 1 && start.Len() != outer {
		return 0, fmt.Errorf("%d starts for %d rows (want 1 or one per row)", start.Len(), outer)
	}
	n, es := src.Shape[a.Axis], dst.DType.Size()
	var p paramBlock
	p.ints(outer, dim, n, inner, es, src.Offset, dst.Offset, start.Offset, b2i(start.DType == kernels.I64), b2i(start.Len() > 1))
	l.params = p.bytes()
	l.slots = []int{dst.Slot, src.Slot, start.Slot}
	return (outer*n*inner*es + fixedThreads - 1) / fixedThreads, nil
}

func prepCumsum(s *kernels.Step, l *launch) (int, error) {
	a, ok := s.Attr.(kernels.CumsumAttr)
	if !ok || len(s.In) != 1 || len(s.Out) != 1 || !allF32(s.In[0], s.Out[0]) || !dense(s.In[0], s.Out[0]) {
		return 0, errors.New("wants dense f32 operands and CumsumAttr")
	}
	outer, n, inner, err := axisSplit(s.In[0].Shape, a.Axis)
	if err != nil {
		return 0, err
	}
	var p paramBlock
	p.ints(s.In[0].Offset, s.Out[0].Offset, outer*inner, n, inner, b2i(a.Exclusive), b2i(a.Reverse))
	l.params = p.bytes()
	l.slots = []int{s.Out[0].Slot, s.In[0].Slot}
	return (outer*inner + fixedThreads - 1) / fixedThreads * min(n, 1), nil
}

// supports reports whether the backend has a kernel for s: prepare's
// answer, so what Supports promises is exactly what Launch can encode.
func supports(s *kernels.Step) bool {
	_, err := prepare(s)
	return err == nil || errors.Is(err, errEmpty)
}
