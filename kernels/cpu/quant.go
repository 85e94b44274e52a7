package cpu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

func u8s(bufs []kernels.Buffer, v kernels.View) []uint8 { return bytesOf(bufs, v) }

func s8s(bufs []kernels.Buffer, v kernels.View) []int8 {
	b := bytesOf(bufs, v)
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// dynamicQuantize implements OpDynamicQuantize (ONNX DynamicQuantizeLinear).
func (b *Backend) dynamicQuantize(s *kernels.Step, bufs []kernels.Buffer) error {
	xv := s.In[0]
	qv, sv, zv := s.Out[0], s.Out[1], s.Out[2]
	n := xv.Len()
	x := f32s(bufs, xv)[xv.Offset : xv.Offset+n]
	q := u8s(bufs, qv)[qv.Offset : qv.Offset+n]
	scale, zp, err := gemm.QuantizeU8(q, x)
	if err != nil {
		return fmt.Errorf("cpu: dynamic_quantize: %w", err)
	}
	f32s(bufs, sv)[sv.Offset] = scale
	u8s(bufs, zv)[zv.Offset] = zp
	return nil
}

// zeroPoints returns a U8/I8 zero-point operand as a slice (1 or n values).
func zeroPointsU8(bufs []kernels.Buffer, v kernels.View) []uint8 {
	return u8s(bufs, v)[v.Offset : v.Offset+v.Len()]
}

func zeroPointsS8(bufs []kernels.Buffer, v kernels.View) []int8 {
	return s8s(bufs, v)[v.Offset : v.Offset+v.Len()]
}

// matmulInteger implements OpMatMulInteger: a dense U8 [M, K] times b
// [K, N] (read transposed in place when stored [N, K]).
func (b *Backend) matmulInteger(s *kernels.Step, bufs []kernels.Buffer) error {
	av, bv, zav, zbv, out := s.In[0], s.In[1], s.In[2], s.In[3], s.Out[0]
	m, k := av.Shape[0], av.Shape[1]
	n := bv.Shape[1]
	c := i32s(bufs, out)[out.Offset : out.Offset+m*n]
	if m*n == 0 {
		return nil
	}
	if k == 0 {
		clear(c)
		return nil
	}
	tb, ldb, err := kernels.GemmLayout(bv)
	if err != nil {
		return fmt.Errorf("cpu: matmul_integer operand b: %w", err)
	}
	a := u8s(bufs, av)[av.Offset:]
	za := u8s(bufs, zav)[zav.Offset]
	e := gemm.Default()
	if q := b.packedB(bufs, bv, zbv, k, n, tb, ldb); q != nil {
		e.GemmU8(m, a, k, za, q, c, n)
		return nil
	}
	if bv.DType == kernels.I8 {
		e.MatMulIntegerS8(m, n, k, a, k, za, tb, s8s(bufs, bv)[bv.Offset:], ldb, zeroPointsS8(bufs, zbv), c, n)
	} else {
		e.MatMulIntegerU8(m, n, k, a, k, za, tb, u8s(bufs, bv)[bv.Offset:], ldb, zeroPointsU8(bufs, zbv), c, n)
	}
	return nil
}

// convInteger1d implements OpConvInteger1d (groups = 1) as an integer
// im2col + integer GEMM. Padding inserts the input zero point, as ONNX
// ConvInteger specifies, so padded taps contribute nothing.
func (b *Backend) convInteger1d(s *kernels.Step, bufs []kernels.Buffer) error {
	xv, wv, zxv, zwv, out := s.In[0], s.In[1], s.In[2], s.In[3], s.Out[0]
	a, ok := s.Attr.(kernels.ConvAttr)
	if !ok {
		return fmt.Errorf("cpu: conv_integer1d: missing attributes")
	}
	N, Cin, L := xv.Shape[0], xv.Shape[1], xv.Shape[2]
	Cout, K := wv.Shape[0], wv.Shape[2]
	Lout := out.Shape[2]
	if N*Cout*Lout == 0 {
		return nil
	}
	x := u8s(bufs, xv)[xv.Offset:]
	zx := u8s(bufs, zxv)[zxv.Offset]
	y := i32s(bufs, out)[out.Offset:]
	// colT[t, c·K + k] = x[c, t·stride + k·dil − pad]: rows are output
	// positions so the weight [Cout, Cin·K] is the transposed B operand.
	sc := quantScratchPool.Get().(*quantScratch)
	defer quantScratchPool.Put(sc)
	sc.colT = grow(sc.colT, Lout*Cin*K)
	sc.tmp = grow(sc.tmp, Lout*Cout)
	colT, tmp := sc.colT, sc.tmp
	e := gemm.Default()
	// The weight read as [Cin·K, Cout] transposed is a GEMM B operand.
	wAsB := kernels.View{Slot: wv.Slot, Offset: wv.Offset, DType: wv.DType, Shape: []int{Cin * K, Cout}, Strides: []int{1, Cin * K}}
	q := b.packedB(bufs, wAsB, zwv, Cin*K, Cout, true, Cin*K)
	for n := 0; n < N; n++ {
		xn := x[n*Cin*L:]
		for t := 0; t < Lout; t++ {
			row := colT[t*Cin*K : (t+1)*Cin*K]
			for c := 0; c < Cin; c++ {
				for k := 0; k < K; k++ {
					i := t*a.Stride + k*a.Dilation - a.PadLeft
					v := zx
					if i >= 0 && i < L {
						v = xn[c*L+i]
					}
					row[c*K+k] = v
				}
			}
		}
		switch {
		case q != nil:
			e.GemmU8(Lout, colT, Cin*K, zx, q, tmp, Cout)
		case wv.DType == kernels.I8:
			e.MatMulIntegerS8(Lout, Cout, Cin*K, colT, Cin*K, zx, true, s8s(bufs, wv)[wv.Offset:], Cin*K, zeroPointsS8(bufs, zwv), tmp, Cout)
		default:
			e.MatMulIntegerU8(Lout, Cout, Cin*K, colT, Cin*K, zx, true, u8s(bufs, wv)[wv.Offset:], Cin*K, zeroPointsU8(bufs, zwv), tmp, Cout)
		}
		yn := y[n*Cout*Lout:]
		for t := 0; t < Lout; t++ {
			for co := 0; co < Cout; co++ {
				yn[co*Lout+t] = tmp[t*Cout+co]
			}
		}
	}
	return nil
}

// quantScratch is the reusable im2col and product memory of an integer
// convolution.
type quantScratch struct {
	colT []uint8
	tmp  []int32
}

var quantScratchPool = sync.Pool{New: func() any { return new(quantScratch) }}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// packedKey identifies a constant integer-GEMM B operand and its zero
// points by where they live.
type packedKey struct {
	data, zb       uintptr
	off, k, n, ldb int
	trans, signed  bool
	nzb            int
}

// packedB returns the packed form of a B operand that lives in read-only
// (wrapped weight) memory, packing it on first use; nil when B or its zero
// points may change between launches.
func (b *Backend) packedB(bufs []kernels.Buffer, bv, zbv kernels.View, k, n int, trans bool, ldb int) *gemm.QuantB {
	bb, ok1 := bufs[bv.Slot].(*buffer)
	zb, ok2 := bufs[zbv.Slot].(*buffer)
	if !ok1 || !ok2 || !bb.wrapped || !zb.wrapped {
		return nil
	}
	key := packedKey{
		data: uintptr(unsafe.Pointer(unsafe.SliceData(bb.b))), zb: uintptr(unsafe.Pointer(unsafe.SliceData(zb.b))) + uintptr(zbv.Offset),
		off: bv.Offset, k: k, n: n, ldb: ldb, trans: trans, signed: bv.DType == kernels.I8, nzb: zbv.Len(),
	}
	if q, ok := b.packed.Load(key); ok {
		return q.(*gemm.QuantB)
	}
	var q *gemm.QuantB
	if bv.DType == kernels.I8 {
		q = gemm.PackS8(trans, k, n, s8s(bufs, bv)[bv.Offset:], ldb, zeroPointsS8(bufs, zbv))
	} else {
		q = gemm.PackU8(trans, k, n, u8s(bufs, bv)[bv.Offset:], ldb, zeroPointsU8(bufs, zbv))
	}
	actual, _ := b.packed.LoadOrStore(key, q)
	return actual.(*gemm.QuantB)
}
