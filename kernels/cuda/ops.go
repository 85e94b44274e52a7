package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen"
	"github.com/tensorforge/forge/kernels/cuda/cublaslt"
	"github.com/tensorforge/forge/kernels/cuda/driver"
)

// ptr returns the device address of view v's first element.
func ptr(bufs []kernels.Buffer, v kernels.View) driver.DevicePtr {
	return bufs[v.Slot].(*buffer).ptr + driver.DevicePtr(v.Offset*v.DType.Size())
}

// optPtr is ptr for an optional operand i of s (0 when absent).
func optPtr(s *kernels.Step, bufs []kernels.Buffer, i int) driver.DevicePtr {
	if i >= len(s.In) {
		return 0
	}
	return ptr(bufs, s.In[i])
}

// base returns the address of the buffer behind v (generated kernels add
// the offsets themselves).
func base(bufs []kernels.Buffer, v kernels.View) driver.DevicePtr {
	return bufs[v.Slot].(*buffer).ptr
}

func blocks(n int64, per int) uint32 { return uint32((n + int64(per) - 1) / int64(per)) }

// splitAxis returns the extents before, at and after axis.
func splitAxis(shape []int, axis int) (outer, dim, inner int) {
	outer, inner = 1, 1
	for i, d := range shape {
		switch {
		case i < axis:
			outer *= d
		case i > axis:
			inner *= d
		}
	}
	return outer, shape[axis], inner
}

// structBytes returns the bytes of a kernel argument struct (laid out as its
// C declaration: the Go structs below mirror kernels.cu field by field).
func structBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// launch runs one step on the queue's stream (on the backend's thread).
func (q *queue) launch(s *kernels.Step, bufs []kernels.Buffer) error {
	q.b.dispatches.Add(1)
	switch s.Op {
	case kernels.OpFused:
		return q.fused(s, bufs)
	case kernels.OpReduce:
		return q.reduce(s, bufs)
	case kernels.OpMatMul:
		return q.matmul(s, bufs, false, nil)
	case kernels.OpSoftmax:
		a := s.Attr.(kernels.SoftmaxAttr)
		outer, n, inner := splitAxis(s.In[0].Shape, a.Axis)
		rows := int64(outer * inner)
		if rows == 0 || n == 0 {
			return nil
		}
		return q.run("forge_softmax", uint32(rows), 256, 0, q.args.Reset().Ptr(ptr(bufs, s.In[0])).Ptr(ptr(bufs, s.Out[0])).I64(rows).I32(int32(n)).I32(int32(inner)).I32(b2i(a.Log)))
	case kernels.OpLayerNorm:
		return q.layerNorm(s, bufs, false)
	case kernels.OpGroupNorm:
		a := s.Attr.(kernels.NormAttr)
		x := s.In[0]
		N, C := x.Shape[0], x.Shape[1]
		L := int64(x.Len() / max(N*C, 1))
		if N*C == 0 || L == 0 {
			return nil
		}
		groups, S := groupNormSplits(s)
		if S == 1 {
			return q.run("forge_group_norm", uint32(groups), 256, 0, q.args.Reset().Ptr(ptr(bufs, x)).Ptr(optPtr(s, bufs, 1)).Ptr(optPtr(s, bufs, 2)).Ptr(ptr(bufs, s.Out[0])).I32(int32(N)).I32(int32(C)).I64(L).I32(int32(a.Groups)).F32(a.Eps))
		}
		part := q.scratch.ptr
		if err := q.run("forge_group_stats", uint32(groups*S), 256, 0, q.args.Reset().Ptr(ptr(bufs, x)).Ptr(part).I32(int32(C)).I64(L).I32(int32(a.Groups)).I32(int32(S))); err != nil {
			return err
		}
		return q.run("forge_group_apply", uint32(groups*S), 256, 0, q.args.Reset().Ptr(ptr(bufs, x)).Ptr(part).Ptr(optPtr(s, bufs, 1)).Ptr(optPtr(s, bufs, 2)).Ptr(ptr(bufs, s.Out[0])).I32(int32(C)).I64(L).I32(int32(a.Groups)).I32(int32(S)).F32(a.Eps))
	case kernels.OpAttention:
		return q.attention(s, bufs, true)
	case kernels.OpLinearQ:
		x, w := s.In[0], s.In[1]
		M, K, N := x.Shape[0], x.Shape[1], w.Shape[0]
		if M*N == 0 {
			return nil
		}
		if K > 0 && linearQGEMM(s, bufs, q.b) {
			return q.linearQ(s, bufs)
		}
		return q.run("forge_linear_q", min(blocks(int64(N)*32, 256), uint32(q.b.info.SMs*8)), 256, 0, q.args.Reset().Ptr(ptr(bufs, x)).Ptr(ptr(bufs, w)).Ptr(ptr(bufs, s.In[2])).Ptr(ptr(bufs, s.In[3])).Ptr(ptr(bufs, s.Out[0])).I32(int32(M)).I32(int32(N)).I32(int32(K)).I32(b2i(w.DType == kernels.I8)))
	case kernels.OpGather:
		d, ix := s.In[0], s.In[1]
		outer, dim, inner := splitAxis(d.Shape, s.Attr.(kernels.AxisAttr).Axis)
		total := int64(outer * ix.Len() * inner)
		if total == 0 {
			return nil
		}
		return q.run("forge_gather", blocks(total, 256), 256, 0, q.args.Reset().Ptr(ptr(bufs, d)).Ptr(ptr(bufs, ix)).I32(b2i(ix.DType == kernels.I64)).Ptr(ptr(bufs, s.Out[0])).I64(int64(outer)).I32(int32(dim)).I64(int64(ix.Len())).I64(int64(inner)).I32(int32(d.DType.Size())).Ptr(q.errDev))
	case kernels.OpSliceUpdate:
		src, start, dst := s.In[0], s.In[1], s.Out[0]
		ax := s.Attr.(kernels.AxisAttr).Axis
		outer, dim, inner := splitAxis(dst.Shape, ax)
		n := src.Shape[ax]
		if start.Len() != 1 && start.Len() != outer {
			return fmt.Errorf("cuda: slice_update: %d starts for %d rows (want 1 or one per row)", start.Len(), outer)
		}
		total := int64(outer * n * inner)
		if total == 0 {
			return nil
		}
		return q.run("forge_slice_update", blocks(total, 256), 256, 0, q.args.Reset().Ptr(ptr(bufs, src)).Ptr(ptr(bufs, start)).I32(b2i(start.DType == kernels.I64)).I32(int32(start.Len())).Ptr(ptr(bufs, dst)).I64(int64(outer)).I32(int32(dim)).I32(int32(n)).I64(int64(inner)).I32(int32(dst.DType.Size())).Ptr(q.errDev))
	case kernels.OpRepeatInterleave:
		x, c, y := s.In[0], s.In[1], s.Out[0]
		ax := s.Attr.(kernels.AxisAttr).Axis
		outer, dim, inner := splitAxis(x.Shape, ax)
		total := y.Shape[ax]
		n := int64(outer * total * inner)
		return q.run("forge_repeat_interleave", max(blocks(n, 256), 1), 256, 0, q.args.Reset().Ptr(ptr(bufs, x)).Ptr(ptr(bufs, c)).I32(b2i(c.DType == kernels.I64)).Ptr(ptr(bufs, y)).I64(int64(outer)).I32(int32(dim)).I64(int64(total)).I64(int64(inner)).I32(int32(x.DType.Size())).Ptr(q.errDev))
	case kernels.OpPad:
		return q.pad(s, bufs)
	case kernels.OpCumsum:
		a := s.Attr.(kernels.CumsumAttr)
		outer, n, inner := splitAxis(s.In[0].Shape, a.Axis)
		lines := int64(outer * inner)
		if lines == 0 || n == 0 {
			return nil
		}
		return q.run("forge_cumsum", blocks(lines, 128), 128, 0, q.args.Reset().Ptr(ptr(bufs, s.In[0])).Ptr(ptr(bufs, s.Out[0])).I64(int64(outer)).I32(int32(n)).I64(int64(inner)).I32(b2i(a.Exclusive)).I32(b2i(a.Reverse)))
	case kernels.OpConv1d, kernels.OpConvTranspose1d:
		return q.conv(s, bufs)
	case kernels.OpLSTM:
		return q.lstm(s, bufs)
	case kernels.OpDynamicQuantize:
		n := int64(s.In[0].Len())
		return q.run("forge_dynamic_quantize", 1, 1024, 0, q.args.Reset().Ptr(ptr(bufs, s.In[0])).Ptr(ptr(bufs, s.Out[0])).Ptr(ptr(bufs, s.Out[1])).Ptr(ptr(bufs, s.Out[2])).I64(n).Ptr(q.errDev))
	case kernels.OpMatMulInteger:
		a, bv, y := s.In[0], s.In[1], s.Out[0]
		M, K, N := a.Shape[0], a.Shape[1], bv.Shape[1]
		if M*N == 0 {
			return nil
		}
		return q.run("forge_matmul_integer", blocks(int64(M*N), 256), 256, 0, q.args.Reset().Ptr(ptr(bufs, a)).Ptr(ptr(bufs, bv)).Ptr(ptr(bufs, s.In[2])).Ptr(ptr(bufs, s.In[3])).Ptr(ptr(bufs, y)).I32(int32(M)).I32(int32(N)).I32(int32(K)).I64(int64(bv.Strides[0])).I64(int64(bv.Strides[1])).I32(b2i(bv.DType == kernels.I8)).I32(b2i(s.In[3].Len() > 1)))
	case kernels.OpConvInteger1d:
		x, w, y := s.In[0], s.In[1], s.Out[0]
		a := s.Attr.(kernels.ConvAttr)
		N, Cin, L := x.Shape[0], x.Shape[1], x.Shape[2]
		Cout, K, Lout := w.Shape[0], w.Shape[2], y.Shape[2]
		total := int64(N * Cout * Lout)
		if total == 0 {
			return nil
		}
		return q.run("forge_conv_integer1d", blocks(total, 256), 256, 0, q.args.Reset().Ptr(ptr(bufs, x)).Ptr(ptr(bufs, w)).Ptr(ptr(bufs, s.In[2])).Ptr(ptr(bufs, s.In[3])).Ptr(ptr(bufs, y)).
			I32(int32(N)).I32(int32(Cin)).I32(int32(L)).I32(int32(Cout)).I32(int32(K)).I32(int32(Lout)).I32(int32(a.Stride)).I32(int32(a.PadLeft)).I32(int32(max(a.Dilation, 1))).I32(int32(max(a.Groups, 1))).I32(b2i(w.DType == kernels.I8)).I32(b2i(s.In[3].Len() > 1)))
	}
	return fmt.Errorf("cuda: op %s is not implemented", s.Op)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// run launches a hand-written kernel over a 1-D grid.
func (q *queue) run(name string, grid, block, shared uint32, args *driver.Args) error {
	f := q.b.mods.fixed(name)
	if f == 0 {
		return fmt.Errorf("cuda: kernel %s is not loaded", name)
	}
	if waitsForInputs(name) {
		return q.launchWaiting(f, driver.Dim3{X: grid}, driver.Dim3{X: block}, shared, args)
	}
	return q.b.drv.Launch(f, driver.Dim3{X: grid}, driver.Dim3{X: block}, shared, q.stream, args)
}

// waitsForInputs reports whether hand-written kernel name begins with
// wait_inputs (common.cuh), so that it may be launched early: the kernels
// of a decoder step, a chain of launches each too short to hide the next
// one's start.
func waitsForInputs(name string) bool {
	switch name {
	case "forge_linear_q", "forge_attention_decode", "forge_attention_combine":
		return true
	}
	return false
}

// launchWaiting launches f, a kernel that waits for its inputs itself
// (wait_inputs), early where the backend may (driver.LaunchEarly).
func (q *queue) launchWaiting(f driver.Function, grid, block driver.Dim3, shared uint32, args *driver.Args) error {
	if q.b.early {
		return q.b.drv.LaunchEarly(f, grid, block, shared, q.stream, args)
	}
	return q.b.drv.Launch(f, grid, block, shared, q.stream, args)
}

// transpose runs an OpFused step that copies a float32 matrix read down
// its columns (a transposed view: Whisper's cross-attention keys and
// values, stored [d, positions] from a [positions, d] product) as
// forge_transpose, through shared memory, and reports whether it did. The
// generated kernel reads such a view 4 bytes per 32-byte sector: 9–10 µs
// for one window's [384, 1500] on an H100, eight of them a window.
func (q *queue) transpose(s *kernels.Step, bufs []kernels.Buffer) (bool, error) {
	t, ok := transposeOf(s)
	if !ok {
		return false, nil
	}
	args := q.args.Reset().Ptr(ptr(bufs, s.In[0])).Ptr(ptr(bufs, s.Out[0])).I32(int32(t.rows)).I32(int32(t.cols)).I64(int64(t.ldx)).I64(int64(t.ldy))
	return true, q.b.drv.Launch(q.b.mods.fixed("forge_transpose"), driver.Dim3{X: blocks(int64(t.cols), 32), Y: blocks(int64(t.rows), 32)}, driver.Dim3{X: 32, Y: 8}, 0, q.stream, args)
}

// transposed is a copy y[r, c] = x[r + c·ldx] (y's rows ldy apart).
type transposed struct{ rows, cols, ldx, ldy int }

// transposeOf reports whether s copies a float32 matrix read down its
// columns, and its shape (see queue.transpose).
func transposeOf(s *kernels.Step) (transposed, bool) {
	if s.Op != kernels.OpFused || s.Expr == nil || len(s.Expr.Code) != 1 || s.Expr.Code[0].Op != kernels.ELoad || len(s.In) != 1 || len(s.Out) != 1 {
		return transposed{}, false
	}
	if s.In[0].DType != kernels.F32 || s.Out[0].DType != kernels.F32 {
		return transposed{}, false
	}
	v := kernels.Coalesce([]kernels.View{s.Out[0], s.In[0]})
	o, x := v[0], v[1]
	if len(o.Shape) != 2 || o.Strides[1] != 1 || x.Strides[0] != 1 || x.Strides[1] < o.Shape[0] || blocks(int64(o.Shape[0]), 32) > 65535 {
		return transposed{}, false
	}
	return transposed{rows: o.Shape[0], cols: o.Shape[1], ldx: x.Strides[1], ldy: o.Strides[0]}, true
}

// fused launches the generated kernel of an OpFused step.
func (q *queue) fused(s *kernels.Step, bufs []kernels.Buffer) error {
	if ok, err := q.transpose(s, bufs); ok || err != nil {
		return err
	}
	f, err := codegen.LowerFused(s)
	if err != nil {
		return err
	}
	n := f.Len()
	if n == 0 {
		return nil
	}
	src, err := f.Kernel.Source(codegen.CUDA)
	if err != nil {
		return err
	}
	fn, err := q.b.mods.function(f.Kernel.Name, src)
	if err != nil {
		return err
	}
	args := q.args.Reset()
	for _, v := range f.Views {
		args.Ptr(base(bufs, v))
	}
	args.Bytes(f.Params())
	grid := min(blocks(int64(n), 256), uint32(q.b.info.SMs*32))
	return q.b.drv.Launch(fn, driver.Dim3{X: grid}, driver.Dim3{X: 256}, 0, q.stream, args)
}

// Attention kernel geometry, as kernels.cu defines it (ATT_WARPS,
// ATT_ROWS, ATT_TILE); queries of at most attRowsMax rows take the
// row-splitting kernel.
const (
	attWarps   = 8
	attRows    = 4
	attTile    = 32
	attRowsMax = 8
	// attFARows: from this many query rows, forge_attention_fa (64 rows a
	// block sharing each key tile, from half-precision copies made once)
	// has blocks enough to fill the GPU and reads keys and values a
	// quarter as often as forge_attention_tc.
	attFARows = 256
	// attShared is the dynamic shared memory forge_attention may use: its
	// tiles and queries for d = dv = 128.
	attShared = 4 * (attTile*129 + attTile*129 + attWarps*attRows*128)
)

// attSplits is how many blocks share the keys of one row in
// forge_attention_rows: enough to give the GPU a few hundred blocks, each
// with at least a tile per warp.
func attSplits(rows, keys int) int {
	return max(1, min((keys+attWarps*attTile-1)/(attWarps*attTile), (264+rows-1)/rows, attMaxSplits))
}

// attMaxSplits is the most splits forge_attention_combine reduces
// (ATT_MAX_SPLITS in kernels.cu).
const attMaxSplits = 64

// forge_attention_decode's head width and warps per block (DEC_D and
// DEC_WARPS in kernels.cu).
const (
	decD     = 64
	decWarps = 4
)

// decSplits is how many blocks share the keys of one row in
// forge_attention_decode: one tile of 32 keys per warp, and no more blocks
// than a couple per SM (each split costs the combine a partial result).
func decSplits(rows, keys int) int {
	return max(1, min((keys+decWarps*32-1)/(decWarps*32), (264+rows-1)/rows, attMaxSplits))
}

// forge_attention_fa_split's rows a block (two groups of three warps of 16
// rows share them) and its dynamic shared memory (FA_SPLIT_SHARED in
// attention.cu: two groups' double-buffered key and value tiles).
const (
	faSplitRows   = 48
	faSplitShared = 2 * 2 * 2 * (64*72 + 64*72)
)

// faSplits reports whether n query rows in each of batch heads take
// forge_attention_fa_split: where forge_attention_fa's blocks of 64 rows
// would leave an SM fewer than two (fewer than two warps a scheduler; the
// kernel is bound by each warp's chain of instructions) and the split
// kernel's blocks of 48 rows, two an SM, still fit in one wave.
func faSplits(n, batch, sms int) bool {
	fa := (n + 63) / 64 * batch
	split := (n + faSplitRows - 1) / faSplitRows * batch
	return fa < 2*sms && split <= 2*sms
}

// attPadKeys is the key count forge_attention_kv_half's copies hold: whole
// tiles of 64 keys, so that forge_attention_fa loads them without bounds.
func attPadKeys(s int) int { return (s + 63) &^ 63 }

// aligned16 reports whether every pointer is a multiple of 16 bytes (or 0).
func aligned16(ps ...driver.DevicePtr) bool {
	for _, p := range ps {
		if p%16 != 0 {
			return false
		}
	}
	return true
}

// layerNorm runs an OpLayerNorm step; toHalf says to leave its output in
// the queue's scratch in the backend's half precision instead, for the
// product after it (halfin.go).
func (q *queue) layerNorm(s *kernels.Step, bufs []kernels.Buffer, toHalf bool) error {
	a := s.Attr.(kernels.NormAttr)
	x, y := s.In[0], s.Out[0]
	n := 1
	for _, d := range x.Shape[a.Axis:] {
		n *= d
	}
	rows := int64(x.Len() / max(n, 1))
	if rows == 0 || n == 0 {
		return nil
	}
	yp, half := ptr(bufs, y), int32(0)
	if toHalf {
		yp, half = q.scratch.ptr, 1+b2i(q.b.precision == kernels.BF16)
	}
	if n%128 == 0 && n <= 1024 && rows >= normWarpRows && aligned16(ptr(bufs, x), yp, optPtr(s, bufs, 1), optPtr(s, bufs, 2)) {
		args := q.args.Reset().Ptr(ptr(bufs, x)).Ptr(optPtr(s, bufs, 1)).Ptr(optPtr(s, bufs, 2)).Ptr(yp).I64(rows).I32(int32(n)).F32(a.Eps).I32(half)
		return q.run("forge_layer_norm_warp", blocks(rows, 8), 256, 0, args)
	}
	args := q.args.Reset().Ptr(ptr(bufs, x)).Ptr(optPtr(s, bufs, 1)).Ptr(optPtr(s, bufs, 2)).Ptr(ptr(bufs, y)).I64(rows).I32(int32(n)).F32(a.Eps)
	if err := q.run("forge_layer_norm", uint32(rows), 256, 0, args); err != nil || !toHalf {
		return err
	}
	flat := kernels.View{Slot: y.Slot, Offset: y.Offset, DType: y.DType, Shape: []int{int(rows), n}, Strides: []int{n, 1}}
	return q.toHalf(flat, bufs, 1, 0, q.scratch.ptr, q.stream)
}

// normWarpRows: from this many rows, a layer norm of rows of 128·k ≤ 1,024
// values takes forge_layer_norm_warp (a warp per row). Fewer rows (decoder
// steps) keep forge_layer_norm, whose sums a product's fused norm
// prologue (fuse.go) repeats exactly.
const normWarpRows = 64

// attnArgs mirrors kernels.cu's AttnArgs.
type attnArgs struct {
	q, k, v, mask, o, part         uint64
	qb, kb, vb, ob, mb             [4]int64
	qr, qc, kr, kc, vr, vc, mr, mc int64
	bshape                         [4]int32
	n, s, d, dv                    int32
	nb, splits                     int32
}

// decodeSplits is how many partial results per row forge_attention_decode
// leaves for forge_attention_combine on attention step s, or 0 where s is
// not a decoder step with heads of 64 (attention decides the same way).
func decodeSplits(s *kernels.Step) int {
	qv, kv, vv := s.In[0], s.In[1], s.In[2]
	r := len(qv.Shape)
	n, d, keys, dv := qv.Shape[r-2], qv.Shape[r-1], kv.Shape[r-2], vv.Shape[r-1]
	if n > attRowsMax || d != decD || dv != decD {
		return 0
	}
	batch := 1
	for _, e := range qv.Shape[:r-2] {
		batch *= e
	}
	return decSplits(n*batch, keys)
}

// attention launches forge_attention: q [..., n, d], k [..., s, d], v
// [..., s, dv] with the batch axes of the output, mask [n, s]. Without
// combine, a decoder step split over blocks stops at its partial results
// in the queue's scratch (a fused product after it reduces them itself,
// fuse.go) and leaves its output unwritten.
func (q *queue) attention(s *kernels.Step, bufs []kernels.Buffer, combine bool) error {
	qv, kv, vv, out := s.In[0], s.In[1], s.In[2], s.Out[0]
	r := len(qv.Shape)
	a := attnArgs{
		q: uint64(ptr(bufs, qv)), k: uint64(ptr(bufs, kv)), v: uint64(ptr(bufs, vv)), o: uint64(ptr(bufs, out)),
		n: int32(qv.Shape[r-2]), d: int32(qv.Shape[r-1]), s: int32(kv.Shape[r-2]), dv: int32(vv.Shape[r-1]),
		qr: int64(qv.Strides[r-2]), qc: int64(qv.Strides[r-1]),
		kr: int64(kv.Strides[r-2]), kc: int64(kv.Strides[r-1]),
		vr: int64(vv.Strides[r-2]), vc: int64(vv.Strides[r-1]),
	}
	var m kernels.View
	if len(s.In) > 3 {
		m = s.In[3]
		mr := len(m.Shape)
		if mr != 2 && mr != r {
			return fmt.Errorf("cuda: attention: mask %v for a rank-%d output", m.Shape, r)
		}
		a.mask = uint64(ptr(bufs, m))
		a.mr, a.mc = int64(m.Strides[mr-2]), int64(m.Strides[mr-1])
	}
	batch := 1
	nb := r - 2
	for i := 0; i < nb; i++ {
		j := i + 4 - nb // right-align the batch axes in the four slots
		a.bshape[j] = int32(qv.Shape[i])
		a.qb[j], a.kb[j], a.vb[j], a.ob[j] = int64(qv.Strides[i]), int64(kv.Strides[i]), int64(vv.Strides[i]), int64(out.Strides[i])
		if len(m.Shape) == r {
			a.mb[j] = int64(m.Strides[i])
		}
		batch *= qv.Shape[i]
	}
	for j := 0; j < 4-nb; j++ {
		a.bshape[j] = 1
	}
	a.nb = 4
	if batch == 0 || a.n == 0 {
		return nil
	}
	if splits := decodeSplits(s); splits > 0 {
		// A decoder step with heads of 64: the latency-bound kernel.
		a.splits = int32(splits)
		if a.splits > 1 {
			a.part = uint64(q.scratch.ptr)
		}
		args := q.args.Reset().Bytes(structBytes(&a))
		if err := q.launchWaiting(q.b.mods.fixed("forge_attention_decode"), driver.Dim3{X: uint32(a.n), Y: uint32(batch), Z: uint32(a.splits)}, driver.Dim3{X: 32 * decWarps}, 0, args); err != nil {
			return err
		}
		if a.splits == 1 || !combine {
			return nil
		}
		return q.launchWaiting(q.b.mods.fixed("forge_attention_combine"), driver.Dim3{X: uint32(a.n), Y: uint32(batch)}, driver.Dim3{X: 32}, 0, args)
	}
	if a.n <= attRowsMax {
		// A few rows (a decoder step): the keys of a row are split between
		// blocks and between the warps of each block.
		a.splits = int32(attSplits(int(a.n)*batch, int(a.s)))
		if a.splits > 1 {
			a.part = uint64(q.scratch.ptr)
		}
		args := q.args.Reset().Bytes(structBytes(&a))
		f := q.b.mods.fixed("forge_attention_rows")
		if err := q.b.drv.Launch(f, driver.Dim3{X: uint32(a.n), Y: uint32(batch), Z: uint32(a.splits)}, driver.Dim3{X: 32 * attWarps}, 0, q.stream, args); err != nil {
			return err
		}
		if a.splits == 1 {
			return nil
		}
		return q.launchWaiting(q.b.mods.fixed("forge_attention_combine"), driver.Dim3{X: uint32(a.n), Y: uint32(batch)}, driver.Dim3{X: 32}, 0, args)
	}
	if prec := q.b.stepPrecision(s); prec != kernels.F32 && a.d == 64 && a.dv == 64 {
		// Half-precision products: both on tensor cores.
		bf16 := b2i(prec == kernels.BF16)
		if a.n >= attFARows {
			sp := attPadKeys(int(a.s))
			args := q.args.Reset().Bytes(structBytes(&a)).Ptr(q.scratch.ptr).I32(int32(sp)).I32(bf16)
			if err := q.b.drv.Launch(q.b.mods.fixed("forge_attention_kv_half"), driver.Dim3{X: blocks(int64(sp), 64), Y: uint32(batch)}, driver.Dim3{X: 256}, 0, q.stream, args); err != nil {
				return err
			}
			if q.b.faSplit && faSplits(int(a.n), batch, q.b.info.SMs) {
				return q.b.drv.Launch(q.b.mods.fixed("forge_attention_fa_split"), driver.Dim3{X: blocks(int64(a.n), faSplitRows), Y: uint32(batch)}, driver.Dim3{X: 192}, faSplitShared, q.stream, args)
			}
			return q.b.drv.Launch(q.b.mods.fixed("forge_attention_fa"), driver.Dim3{X: blocks(int64(a.n), 64), Y: uint32(batch)}, driver.Dim3{X: 128}, 0, q.stream, args)
		}
		args := q.args.Reset().Bytes(structBytes(&a)).I32(bf16)
		return q.b.drv.Launch(q.b.mods.fixed("forge_attention_tc"), driver.Dim3{X: blocks(int64(a.n), 16), Y: uint32(batch)}, driver.Dim3{X: 128}, 0, q.stream, args)
	}
	args := q.args.Reset().Bytes(structBytes(&a))
	f := q.b.mods.fixed("forge_attention")
	shared := uint32(4 * (attTile*(a.d+1) + attTile*(a.dv+1) + attWarps*attRows*a.d))
	return q.b.drv.Launch(f, driver.Dim3{X: blocks(int64(a.n), attWarps*attRows), Y: uint32(batch)}, driver.Dim3{X: 32 * attWarps}, shared, q.stream, args)
}

// padArgs mirrors kernels.cu's PadArgs.
type padArgs struct {
	x, y                      uint64
	outShape, inShape, before [8]int64
	rank, mode, es, _         int32
}

func (q *queue) pad(s *kernels.Step, bufs []kernels.Buffer) error {
	x, y := s.In[0], s.Out[0]
	at := s.Attr.(kernels.PadAttr)
	a := padArgs{x: uint64(ptr(bufs, x)), y: uint64(ptr(bufs, y)), rank: int32(len(x.Shape)), mode: int32(at.Mode), es: int32(x.DType.Size())}
	for i := range x.Shape {
		a.outShape[i], a.inShape[i], a.before[i] = int64(y.Shape[i]), int64(x.Shape[i]), int64(at.Before[i])
	}
	total := int64(y.Len())
	if total == 0 {
		return nil
	}
	return q.run("forge_pad", blocks(total, 256), 256, 0, q.args.Reset().Bytes(structBytes(&a)).U64(valueBits(at.Value, x.DType)))
}

// valueBits encodes v as an element of dt, for the padding constant.
func valueBits(v float64, dt kernels.DType) uint64 {
	var b [8]byte
	switch dt {
	case kernels.F32:
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(v)))
	case kernels.F16:
		binary.LittleEndian.PutUint16(b[:], kernels.F32ToF16(float32(v)))
	case kernels.BF16:
		binary.LittleEndian.PutUint16(b[:], kernels.F32ToBF16(float32(v)))
	case kernels.I32:
		binary.LittleEndian.PutUint32(b[:], uint32(int32(v)))
	case kernels.I64:
		binary.LittleEndian.PutUint64(b[:], uint64(int64(v)))
	case kernels.U8, kernels.Bool:
		b[0] = uint8(v)
	case kernels.I8:
		b[0] = uint8(int8(v))
	}
	return binary.LittleEndian.Uint64(b[:])
}

// convArgs mirrors kernels.cu's ConvArgs.
type convArgs struct {
	x, w, bias, y                                       uint64
	n, cin, l, cout, k, lout, stride, padL, dil, groups int32
}

func (q *queue) conv(s *kernels.Step, bufs []kernels.Buffer) error {
	x, w, y := s.In[0], s.In[1], s.Out[0]
	at := s.Attr.(kernels.ConvAttr)
	a := convArgs{
		x: uint64(ptr(bufs, x)), w: uint64(ptr(bufs, w)), bias: uint64(optPtr(s, bufs, 2)), y: uint64(ptr(bufs, y)),
		n: int32(x.Shape[0]), cin: int32(x.Shape[1]), l: int32(x.Shape[2]),
		cout: int32(y.Shape[1]), k: int32(w.Shape[2]), lout: int32(y.Shape[2]),
		stride: int32(max(at.Stride, 1)), padL: int32(at.PadLeft), dil: int32(max(at.Dilation, 1)), groups: int32(max(at.Groups, 1)),
	}
	total := int64(y.Len())
	if total == 0 {
		return nil
	}
	if _, ok := convGEMM(s, q.b); ok {
		return q.convGEMM(s, bufs)
	}
	if _, ok := convTGEMM(s, q.b); ok {
		return q.convTGEMM(s, bufs)
	}
	name := "forge_conv1d"
	if s.Op == kernels.OpConvTranspose1d {
		name = "forge_conv_transpose1d"
	}
	return q.run(name, blocks(total, 256), 256, 0, q.args.Reset().Bytes(structBytes(&a)))
}

// lstmArgs mirrors kernels.cu's LSTMArgs.
type lstmArgs struct {
	x                  uint64
	wih, whh, bih, bhh [2]uint64
	h0, c0, y, hN, cN  uint64
	t, b, i, h, d, bf  int32
}

func (q *queue) lstm(s *kernels.Step, bufs []kernels.Buffer) error {
	at := s.Attr.(kernels.LSTMAttr)
	D := 1
	if at.Bidirectional {
		D = 2
	}
	x := s.In[0]
	T, B := x.Shape[0], x.Shape[1]
	if at.BatchFirst {
		T, B = B, T
	}
	if T*B == 0 {
		return nil
	}
	if q.b.blas != nil {
		return q.lstmSteps(s, bufs, T, B, D)
	}
	a := lstmArgs{x: uint64(ptr(bufs, x)), t: int32(T), b: int32(B), i: int32(x.Shape[2]), h: int32(at.Hidden), d: int32(D), bf: b2i(at.BatchFirst)}
	for d := 0; d < D; d++ {
		a.wih[d] = uint64(ptr(bufs, s.In[1+4*d]))
		a.whh[d] = uint64(ptr(bufs, s.In[2+4*d]))
		a.bih[d] = uint64(ptr(bufs, s.In[3+4*d]))
		a.bhh[d] = uint64(ptr(bufs, s.In[4+4*d]))
	}
	a.h0 = uint64(ptr(bufs, s.In[1+4*D]))
	a.c0 = uint64(ptr(bufs, s.In[2+4*D]))
	a.y = uint64(ptr(bufs, s.Out[0]))
	if len(s.Out) > 1 {
		a.hN = uint64(ptr(bufs, s.Out[1]))
	}
	if len(s.Out) > 2 {
		a.cN = uint64(ptr(bufs, s.Out[2]))
	}
	shared := uint32(4 * (2*B*at.Hidden + 4*B*at.Hidden))
	return q.run("forge_lstm", uint32(D), 1024, shared, q.args.Reset().Bytes(structBytes(&a)))
}

// lstmStepArgs mirrors kernels.cu's LSTMStepArgs.
type lstmStepArgs struct {
	gx                   uint64
	whh, bhh             [2]uint64
	hin, cin, hout, cout uint64
	y                    uint64
	gxDir                int64
	t, b, h, d, s, bf    int32
}

// lstmScratch is the workspace of the step-by-step LSTM: the input
// projections of every step and direction, and two h and two c buffers.
func lstmScratch(s *kernels.Step) int {
	at, ok := s.Attr.(kernels.LSTMAttr)
	if !ok {
		return 0
	}
	D := 1
	if at.Bidirectional {
		D = 2
	}
	x := s.In[0]
	B := x.Shape[1]
	if at.BatchFirst {
		B = x.Shape[0]
	}
	return roundUp(D*x.Shape[0]*x.Shape[1]*4*at.Hidden*4) + 4*roundUp(D*B*at.Hidden*4) + roundUp(4)
}

// lstmSteps runs an LSTM as one product per direction for the input
// projections of all steps (cuBLASLt) and then the recurrence, spread over
// many blocks: it is sequential, each step's product with W_hh is not.
// Where its blocks fit one per SM, the whole recurrence is one launch
// (forge_lstm_loop: a grid barrier between steps, W_hh in shared memory);
// otherwise one forge_lstm_step launch per step. Kokoro's LSTMs (H 256,
// both directions: 64 blocks) run some 1,400 steps for a paragraph, and a
// launch per step cost ~16 µs of device time each.
func (q *queue) lstmSteps(s *kernels.Step, bufs []kernels.Buffer, T, B, D int) error {
	at := s.Attr.(kernels.LSTMAttr)
	x, H := s.In[0], at.Hidden
	I := x.Shape[2]
	gxDir := T * B * 4 * H
	gx := q.scratch.ptr
	state := gx + driver.DevicePtr(roundUp(D*gxDir*4))
	size := roundUp(D * B * H * 4)
	hbuf := [2]driver.DevicePtr{state, state + driver.DevicePtr(size)}
	cbuf := [2]driver.DevicePtr{state + driver.DevicePtr(2*size), state + driver.DevicePtr(3*size)}
	for d := 0; d < D; d++ {
		g := cublaslt.GEMM{M: T * B, N: 4 * H, K: I, TransB: true, LDA: I, LDB: I, LDC: 4 * H,
			A: ptr(bufs, x), B: ptr(bufs, s.In[1+4*d]), C: gx + driver.DevicePtr(d*gxDir*4), Bias: ptr(bufs, s.In[3+4*d]),
			Alpha: 1, In: cublaslt.F32, Out: cublaslt.F32, Workspace: q.blasWS.ptr, WorkspaceBytes: q.blasWS.n, Stream: q.stream}
		if err := q.b.blas.h.Matmul(&g); err != nil {
			return fmt.Errorf("lstm input projection: %w", err)
		}
	}
	n := D * B * H * 4
	if err := q.b.drv.MemcpyDtoDAsync(hbuf[0], ptr(bufs, s.In[1+4*D]), n, q.stream); err != nil {
		return err
	}
	a := lstmStepArgs{gx: uint64(gx), y: uint64(ptr(bufs, s.Out[0])), gxDir: int64(gxDir),
		t: int32(T), b: int32(B), h: int32(H), d: int32(D), bf: b2i(at.BatchFirst)}
	for d := 0; d < D; d++ {
		a.whh[d] = uint64(ptr(bufs, s.In[2+4*d]))
		a.bhh[d] = uint64(ptr(bufs, s.In[4+4*d]))
	}
	grid := driver.Dim3{X: uint32((H + 7) / 8), Y: uint32(D)}
	last := T % 2
	if shared := 4 * (4*lstmUnits*H + B*H); B <= 8 && shared <= lstmSharedMax && int(grid.X*grid.Y) <= q.b.info.SMs {
		count := cbuf[1] + driver.DevicePtr(size)
		if err := q.b.drv.MemsetD8Async(count, 0, 4, q.stream); err != nil {
			return err
		}
		a.hin, a.hout = uint64(hbuf[0]), uint64(hbuf[1])
		var cN driver.DevicePtr
		if len(s.Out) > 2 {
			cN = ptr(bufs, s.Out[2])
		}
		f := q.b.mods.fixed("forge_lstm_loop")
		args := q.args.Reset().Bytes(structBytes(&a)).Ptr(count).Ptr(ptr(bufs, s.In[2+4*D])).Ptr(cN)
		if err := q.b.drv.Launch(f, grid, driver.Dim3{X: 128}, uint32(shared), q.stream, args); err != nil {
			return err
		}
		if len(s.Out) > 1 {
			return q.b.drv.MemcpyDtoDAsync(ptr(bufs, s.Out[1]), hbuf[last], n, q.stream)
		}
		return nil
	}
	if err := q.b.drv.MemcpyDtoDAsync(cbuf[0], ptr(bufs, s.In[2+4*D]), n, q.stream); err != nil {
		return err
	}
	f := q.b.mods.fixed("forge_lstm_step")
	for step := 0; step < T; step++ {
		a.s = int32(step)
		a.hin, a.cin = uint64(hbuf[step%2]), uint64(cbuf[step%2])
		a.hout, a.cout = uint64(hbuf[(step+1)%2]), uint64(cbuf[(step+1)%2])
		if err := q.b.drv.Launch(f, grid, driver.Dim3{X: 128}, 0, q.stream, q.args.Reset().Bytes(structBytes(&a))); err != nil {
			return err
		}
	}
	if len(s.Out) > 1 {
		if err := q.b.drv.MemcpyDtoDAsync(ptr(bufs, s.Out[1]), hbuf[last], n, q.stream); err != nil {
			return err
		}
	}
	if len(s.Out) > 2 {
		if err := q.b.drv.MemcpyDtoDAsync(ptr(bufs, s.Out[2]), cbuf[last], n, q.stream); err != nil {
			return err
		}
	}
	return nil
}

// lstmUnits is kernels.cu's LSTM_UNITS: hidden units per block.
const lstmUnits = 8

// lstmSharedMax is the most dynamic shared memory forge_lstm_loop takes
// (W_hh rows and h): the 48 KiB a launch gets without opting in, less its
// static arrays.
const lstmSharedMax = 48<<10 - (2*8*4*lstmUnits+4*lstmUnits)*4

// scratchBytes is the per-queue workspace a step needs: half-precision
// copies of a product's operands, a convolution's columns.
func scratchBytes(s *kernels.Step, b *Backend) int {
	if s.Op == kernels.OpGroupNorm {
		if groups, S := groupNormSplits(s); S > 1 {
			return groups * S * 16 // forge_group_stats's partial sums
		}
	}
	if s.Op == kernels.OpMatMul && b.stepPrecision(s) != kernels.F32 && len(s.In) >= 2 && len(s.Out) == 1 {
		return matmulScratch(s)
	}
	if cols, ok := convGEMM(s, b); ok {
		return cols
	}
	if cols, ok := convTGEMM(s, b); ok {
		return cols
	}
	if s.Op == kernels.OpLSTM && b.blas != nil {
		return lstmScratch(s)
	}
	if s.Op == kernels.OpAttention && len(s.In) >= 3 {
		q, k, v := s.In[0], s.In[1], s.In[2]
		r := len(q.Shape)
		if b.stepPrecision(s) != kernels.F32 && q.Shape[r-2] >= attFARows && q.Shape[r-1] == 64 && v.Shape[r-1] == 64 {
			// forge_attention_fa's half-precision keys and values.
			return q.Len() / (q.Shape[r-2] * 64) * attPadKeys(k.Shape[r-2]) * 64 * 2 * 2
		}
		if n := q.Shape[r-2]; n <= attRowsMax {
			rows := q.Len() / max(q.Shape[r-1], 1)
			splits := max(attSplits(rows, k.Shape[r-2]), decSplits(rows, k.Shape[r-2]))
			return rows * splits * (v.Shape[r-1] + 2) * 4
		}
	}
	return 0
}

// groupNormSplits returns group norm s's groups (batch × groups) and the
// blocks each takes (groupSplits).
func groupNormSplits(s *kernels.Step) (groups, splits int) {
	a, ok := s.Attr.(kernels.NormAttr)
	if !ok || a.Groups <= 0 || len(s.In) == 0 || len(s.In[0].Shape) < 2 {
		return 0, 1
	}
	x := s.In[0]
	groups = x.Shape[0] * a.Groups
	return groups, groupSplits(groups, int64(x.Len()/max(groups, 1)))
}

// groupSplits is how many blocks share each of a group norm's groups of
// size values: one (forge_group_norm) where the groups alone fill the
// device, else enough for about 1,024 blocks (eight an SM on an H100) of
// at least 2,048 values each (forge_group_stats, forge_group_apply).
func groupSplits(groups int, size int64) int {
	if groups <= 0 || groups >= 1024 {
		return 1
	}
	return int(max(1, min((size+2047)/2048, int64((1024+groups-1)/groups))))
}

// maxCols bounds a convolution's column workspace: longer outputs run in
// chunks of output positions.
const maxCols = 64 << 20

// convGEMM reports whether a convolution runs as columns (im2col) times
// the weight on cuBLASLt, and the workspace it needs: ungrouped
// convolutions with enough work to beat the direct kernel.
func convGEMM(s *kernels.Step, b *Backend) (int, bool) {
	if s.Op != kernels.OpConv1d || b.blas == nil || len(s.In) < 2 || len(s.Out) != 1 {
		return 0, false
	}
	a, ok := s.Attr.(kernels.ConvAttr)
	if !ok || max(a.Groups, 1) != 1 {
		return 0, false
	}
	x, w, y := s.In[0], s.In[1], s.Out[0]
	cin, k, cout, lout := x.Shape[1], w.Shape[2], y.Shape[1], y.Shape[2]
	es := 4
	if b.stepPrecision(s) != kernels.F32 {
		es = 2
	}
	if cout*cin*k*lout < 1<<22 || cin*k == 0 || cin*k*es > maxCols {
		return 0, false
	}
	lc, nb := convChunks(x.Shape[0], cin*k, lout, es)
	return roundUp(nb*cin*k*colsLD(lc, es)*es) + roundUp(cout*cin*k*es), true
}

// convChunks splits a convolution's columns (rows of ck values, lout
// output positions, es bytes each, for n batch elements) into what one
// im2col and one product take within maxCols: lc output positions of one
// element when an element's columns do not fit, else nb whole elements, of
// which the product is one strided batch (Whisper's encoder over 32
// windows: one launch each instead of 32).
func convChunks(n, ck, lout, es int) (lc, nb int) {
	lc = min(lout, maxCols/(ck*es))
	if lc < lout {
		return lc, 1
	}
	return lc, max(1, min(n, maxCols/(ck*colsLD(lout, es)*es)))
}

// colsLD is the row length of a convolution's column matrix of lc
// columns: rounded up to 16 bytes, which cuBLASLt's fast kernels want of
// every operand's rows (Whisper's 1,500 f16 columns took a cutlass
// kernel with 2-element alignment).
func colsLD(lc, es int) int { return (lc*es + 15) / 16 * 16 / es }

// convGEMM runs a convolution as im2col and products (see convChunks):
// for each group of whole batch elements, or for each chunk of output
// positions of one element, y[n][:, chunk] = W [Cout, Cin·K] · cols
// [Cin·K, chunk] (+ bias, set first), the group's elements one strided
// batch of the product.
func (q *queue) convGEMM(s *kernels.Step, bufs []kernels.Buffer) error {
	x, w, y := s.In[0], s.In[1], s.Out[0]
	at := s.Attr.(kernels.ConvAttr)
	N, cin, L := x.Shape[0], x.Shape[1], x.Shape[2]
	cout, k, lout := y.Shape[1], w.Shape[2], y.Shape[2]
	half, es := int32(0), 4
	gm := cublaslt.GEMM{M: cout, K: cin * k, LDA: cin * k, LDC: lout, Alpha: 1,
		In: cublaslt.F32, Out: cublaslt.F32, Workspace: q.blasWS.ptr, WorkspaceBytes: q.blasWS.n, Stream: q.stream}
	cols := q.scratch.ptr
	gm.A = ptr(bufs, w)
	if prec := q.b.stepPrecision(s); prec != kernels.F32 {
		half, gm.In, es = 1, cublaslt.F16, 2
		if prec == kernels.BF16 {
			half, gm.In = 2, cublaslt.BF16
		}
	}
	lc, nb := convChunks(N, cin*k, lout, es)
	if half != 0 {
		wv := w
		wv.Shape, wv.Strides = []int{cout, cin * k}, []int{cin * k, 1}
		var err error
		if bufs[w.Slot].(*buffer).wrapped {
			gm.A, err = q.constHalf(wv, bufs, 1, 0)
		} else {
			gm.A = cols + driver.DevicePtr(roundUp(nb*cin*k*colsLD(lc, es)*es))
			err = q.toHalf(wv, bufs, 1, 0, gm.A, q.stream)
		}
		if err != nil {
			return err
		}
	}
	gm.B = cols
	grid := uint32(q.b.info.SMs * 8)
	for n0 := 0; n0 < N; n0 += nb {
		count := min(nb, N-n0)
		yn := ptr(bufs, y) + driver.DevicePtr(n0*cout*lout*4)
		if len(s.In) > 2 {
			rows := count * cout
			args := q.args.Reset().Ptr(yn).Ptr(ptr(bufs, s.In[2])).I32(int32(rows)).I32(int32(cout)).I64(int64(lout))
			if err := q.run("forge_fill_rows", grid, 256, 0, args); err != nil {
				return err
			}
			gm.Beta = 1
		}
		for t0 := 0; t0 < lout; t0 += lc {
			width := min(lc, lout-t0)
			ld := colsLD(width, es)
			args := q.args.Reset().Ptr(ptr(bufs, x)).Ptr(cols).I32(int32(n0)).I32(int32(cin)).I32(int32(L)).I32(int32(k)).
				I32(int32(t0)).I32(int32(width)).I32(int32(ld)).I32(int32(max(at.Stride, 1))).I32(int32(at.PadLeft)).I32(int32(max(at.Dilation, 1))).I32(half)
			if err := q.b.drv.Launch(q.b.mods.fixed("forge_im2col"), driver.Dim3{X: grid, Y: uint32(count)}, driver.Dim3{X: 256}, 0, q.stream, args); err != nil {
				return err
			}
			// Half-precision columns of a width that is not a multiple
			// of 8 made cuBLASLt take a cutlass kernel with 2-element
			// alignment and a split-K reduction (Whisper's second
			// convolution, 1,500 positions: 22 + 7 µs on an H100); the
			// columns past the last multiple of 8 go in a second product.
			parts := []int{width}
			if half != 0 && width > 8 && width%8 != 0 {
				parts = []int{width &^ 7, width % 8}
			}
			at := 0
			for _, n := range parts {
				step := gm
				step.N, step.LDB = n, ld
				step.B = cols + driver.DevicePtr(at*es)
				step.C = yn + driver.DevicePtr((t0+at)*4)
				if count > 1 {
					step.Batch, step.StrideA, step.StrideB, step.StrideC = count, 0, int64(cin*k*ld), int64(cout*lout)
				}
				if err := q.b.blas.h.Matmul(&step); err != nil {
					return err
				}
				at += n
			}
		}
	}
	return nil
}

// convTGEMM reports whether a transposed convolution runs as one product
// per batch element and a gather (forge_col2im_t), and the workspace:
// ungrouped ones with enough work, whose columns fit the bound.
func convTGEMM(s *kernels.Step, b *Backend) (int, bool) {
	if s.Op != kernels.OpConvTranspose1d || b.blas == nil || len(s.In) < 2 || len(s.Out) != 1 {
		return 0, false
	}
	a, ok := s.Attr.(kernels.ConvAttr)
	if !ok || max(a.Groups, 1) != 1 {
		return 0, false
	}
	x, w := s.In[0], s.In[1]
	cin, L, cout, k := x.Shape[1], x.Shape[2], w.Shape[1], w.Shape[2]
	cols := cout * k * L * 4
	if cin*cout*k*L < 1<<22 || cols > 4*maxCols || !w.Contiguous() {
		return 0, false
	}
	return roundUp(cols), true
}

// convTGEMM computes cols [Cout·K, L] = Wᵀ [Cout·K, Cin] · x[n] [Cin, L]
// with the weight [Cin, Cout·K] read transposed, then gathers the output.
func (q *queue) convTGEMM(s *kernels.Step, bufs []kernels.Buffer) error {
	x, w, y := s.In[0], s.In[1], s.Out[0]
	at := s.Attr.(kernels.ConvAttr)
	N, cin, L := x.Shape[0], x.Shape[1], x.Shape[2]
	cout, k, lout := w.Shape[1], w.Shape[2], y.Shape[2]
	cols := q.scratch.ptr
	grid := uint32(q.b.info.SMs * 8)
	for n := range N {
		g := cublaslt.GEMM{M: cout * k, N: L, K: cin, TransA: true, LDA: cout * k, LDB: L, LDC: L,
			A: ptr(bufs, w), B: ptr(bufs, x) + driver.DevicePtr(n*cin*L*4), C: cols, Alpha: 1,
			In: cublaslt.F32, Out: cublaslt.F32, Workspace: q.blasWS.ptr, WorkspaceBytes: q.blasWS.n, Stream: q.stream}
		if err := q.b.blas.h.Matmul(&g); err != nil {
			return err
		}
		if err := q.run("forge_col2im_t", grid, 256, 0, q.args.Reset().Ptr(cols).Ptr(optPtr(s, bufs, 2)).Ptr(ptr(bufs, y)+driver.DevicePtr(n*cout*lout*4)).
			I32(int32(cout)).I32(int32(k)).I32(int32(L)).I32(int32(lout)).I32(int32(max(at.Stride, 1))).I32(int32(at.PadLeft)).I32(int32(max(at.Dilation, 1)))); err != nil {
			return err
		}
	}
	return nil
}

// transposeEntry and transposeMany mirror kernels.cu's TransposeEntry and
// TransposeMany (trMany entries, TR_MANY).
type transposeEntry struct {
	x, y       uint64
	ldx, ldy   int64
	rows, cols int32
}

type transposeMany struct{ e [trMany]transposeEntry }

const trMany = 8

// transposeGroups gathers runs of consecutive copies that take
// forge_transpose (transposeOf), none reading or writing what another of
// its run writes, into launches of forge_transpose_many of up to trMany
// each: keyed by the run's first step, with the set of steps they absorb.
// skip says a step is launched as part of another already.
func transposeGroups(steps []kernels.Step, skip func(int) bool) (map[int][]int, map[int]bool) {
	var groups map[int][]int
	var absorbed map[int]bool
	for i := 0; i < len(steps); {
		run := []int{}
		for j := i; j < len(steps) && len(run) < trMany && !skip(j); j++ {
			if _, ok := transposeOf(&steps[j]); !ok || !independent(steps, run, j) {
				break
			}
			run = append(run, j)
		}
		if len(run) < 2 {
			i++
			continue
		}
		if groups == nil {
			groups, absorbed = map[int][]int{}, map[int]bool{}
		}
		groups[run[0]] = run
		for _, j := range run[1:] {
			absorbed[j] = true
		}
		i = run[len(run)-1] + 1
	}
	return groups, absorbed
}

// independent reports whether step j neither reads nor writes what the
// steps of run write, nor writes what they read: so all may run at once.
func independent(steps []kernels.Step, run []int, j int) bool {
	s := &steps[j]
	for _, k := range run {
		for _, o := range steps[k].Out {
			if overlaps(s.In[0], o) || overlaps(s.Out[0], o) {
				return false
			}
		}
		for _, v := range steps[k].In {
			if overlaps(s.Out[0], v) {
				return false
			}
		}
	}
	return true
}

// transposeMany launches the copies of run (transposeGroups) as one.
func (q *queue) transposeMany(steps []kernels.Step, run []int, bufs []kernels.Buffer) error {
	var m transposeMany
	var rows, cols int
	for z, j := range run {
		s := &steps[j]
		t, _ := transposeOf(s)
		m.e[z] = transposeEntry{x: uint64(ptr(bufs, s.In[0])), y: uint64(ptr(bufs, s.Out[0])), ldx: int64(t.ldx), ldy: int64(t.ldy), rows: int32(t.rows), cols: int32(t.cols)}
		rows, cols = max(rows, t.rows), max(cols, t.cols)
	}
	args := q.args.Reset().Bytes(structBytes(&m))
	return q.b.drv.Launch(q.b.mods.fixed("forge_transpose_many"), driver.Dim3{X: blocks(int64(cols), 32), Y: blocks(int64(rows), 32), Z: uint32(len(run))}, driver.Dim3{X: 32, Y: 8}, 0, q.stream, args)
}
