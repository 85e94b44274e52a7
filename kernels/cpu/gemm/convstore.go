package gemm

import (
	"fmt"
	"unsafe"
)

// A packed convolution weight or GEMM operand depends only on the weight, its shape, the
// form chosen (float32, AMX tiles, bfloat16 pairs) and the microkernel's
// geometry on this CPU, so a caller may keep its words outside the
// process (kernels/cpu keeps them in a file beside the model) and hand
// them back to a later process, which then uses them in place instead of
// packing. Words and ConvWeightFrom (PackedB.Words and PackedBFrom) are
// the two ends of that.

// Words returns the packed words of w as bytes, aliasing w's memory: the
// float32 panels, the AMX tiles or the bfloat16 pairs, whichever w holds.
func (w *ConvWeight) Words() []byte {
	switch {
	case w.bf != nil:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w.bf))), 2*len(w.bf))
	case w.pairs != nil:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w.pairs))), 4*len(w.pairs))
	default:
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w.data))), 4*len(w.data))
	}
}

// ConvWeightFrom returns the weight that PackConvWeightBF16(cout, cin, k,
// w) (bf16 set, on a CPU with a bfloat16 path) or PackConvWeight(cout,
// cin·k, w, cin·k) would return on this engine, over words: the Words of
// such a packing made earlier with the same engine kind on the same CPU
// path. words is used in place and never written; it must stay valid and
// unchanged while the weight is in use. An error when its length does not
// match the packing's or it is not 4-byte aligned: the caller packs then.
func (e *Engine) ConvWeightFrom(cout, cin, k int, bf16 bool, words []byte) (*ConvWeight, error) {
	if cout <= 0 || cin <= 0 || k <= 0 {
		return nil, fmt.Errorf("gemm: ConvWeightFrom: %d×%d×%d weight", cout, cin, k)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(words)))%4 != 0 {
		return nil, fmt.Errorf("gemm: ConvWeightFrom: words not 4-byte aligned")
	}
	var cw *ConvWeight
	size := 0 // bytes the form takes
	switch pk := bestBF16Kernel(); {
	case bf16 && amxReady():
		var n int
		cw, n = e.convAMXLayout(cout, cin, k)
		size = 2 * n
		if len(words) == size {
			cw.bf = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(words))), n)
		}
	case bf16 && pk != nil:
		var n int
		cw, n = e.convPairsLayout(pk, cout, cin, k)
		size = 4 * n
		if len(words) == size {
			cw.pairs = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(words))), n)
		}
	default:
		l := e.convF32Layout(cout, cin*k)
		cw = &l
		n := cw.panels * cw.kern.mr * cw.depth
		size = 4 * n
		if len(words) == size {
			cw.data = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(words))), n)
		}
	}
	if len(words) != size || size == 0 {
		return nil, fmt.Errorf("gemm: ConvWeightFrom: %d bytes for a %d×%d×%d packing of %d", len(words), cout, cin, k, size)
	}
	return cw, nil
}

// Words returns the packed words of p as bytes, aliasing p's memory.
func (p *PackedB) Words() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(p.data))), 4*len(p.data))
}

// PackedBFrom returns what PackB(transB, k, n, b, ldb) would return on
// this engine, over words: the Words of such a packing made earlier with
// the same engine kind on the same CPU path. words is used in place and
// never written; b is kept as PackB keeps it (the products of one row
// read it). An error when words' length does not match or they are not
// 4-byte aligned: the caller packs then.
func (e *Engine) PackedBFrom(transB bool, k, n int, b []float32, ldb int, words []byte) (*PackedB, error) {
	if k <= 0 || n <= 0 {
		return nil, fmt.Errorf("gemm: PackedBFrom: %d×%d matrix", k, n)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(words)))%4 != 0 {
		return nil, fmt.Errorf("gemm: PackedBFrom: words not 4-byte aligned")
	}
	p, n4 := e.packBLayout(transB, k, n, b, ldb)
	if len(words) != 4*n4 {
		return nil, fmt.Errorf("gemm: PackedBFrom: %d bytes for a %d×%d packing of %d", len(words), k, n, 4*n4)
	}
	p.data = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(words))), n4)
	return p, nil
}
