package graph

import (
	"encoding/binary"
	"fmt"
	"github.com/tensorforge/forge/kernels"
	"math"
	"unsafe"
)

// checkShape validates extents for a leaf.
func checkShape(shape []int) error {
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative extent in shape %v", Shape(shape))
		}
	}
	return nil
}

// Param adds a weight tensor whose bytes are referenced, never copied (they
// may live in an mmap'd file). The caller keeps data alive and unchanged
// while any engine may run a program using it. Graphs that take the same
// bytes share one node, so programs built from them share one device copy.
func (g *Graph) Param(name string, dtype DType, shape Shape, data []byte) Tensor {
	if !dtype.Valid() {
		return g.failf("param "+name, "invalid dtype %s", dtype)
	}
	if err := checkShape(shape); err != nil {
		return g.failf("param "+name, "%v", err)
	}
	if want := shape.Len() * dtype.Size(); len(data) != want {
		return g.failf("param "+name, "%s%v needs %d bytes, got %d", dtype, shape, want, len(data))
	}
	return g.add(node{op: opParam, dtype: dtype, shape: shape.Clone(), data: data, name: name})
}

// ParamF32 is Param for a float32 slice (referenced, not copied).
func (g *Graph) ParamF32(name string, shape Shape, data []float32) Tensor {
	return g.Param(name, F32, shape, f32Bytes(data))
}

// Const adds a small constant whose bytes are copied into the graph.
func (g *Graph) Const(dtype DType, shape Shape, data []byte) Tensor {
	if !dtype.Valid() {
		return g.failf("const", "invalid dtype %s", dtype)
	}
	if err := checkShape(shape); err != nil {
		return g.failf("const", "%v", err)
	}
	if want := shape.Len() * dtype.Size(); len(data) != want {
		return g.failf("const", "%s%v needs %d bytes, got %d", dtype, shape, want, len(data))
	}
	return g.add(node{op: opConst, dtype: dtype, shape: shape.Clone(), data: append([]byte(nil), data...)})
}

// ConstF32 adds a float32 constant (copied).
func (g *Graph) ConstF32(shape Shape, data []float32) Tensor {
	return g.Const(F32, shape, f32Bytes(data))
}

// ConstI64 adds an int64 constant (copied).
func (g *Graph) ConstI64(shape Shape, data []int64) Tensor {
	b := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return g.Const(I64, shape, b)
}

// Scalar adds a 0-d constant of the given dtype holding v (converted).
func (g *Graph) Scalar(v float64, dtype DType) Tensor {
	b := make([]byte, dtype.Size())
	if err := putScalar(b, dtype, v); err != nil {
		return g.failf("scalar", "%v", err)
	}
	return g.Const(dtype, Shape{}, b)
}

// Full adds a constant of the given shape filled with v. It is expressed as
// a broadcast scalar, so it costs no memory.
func (g *Graph) Full(v float64, dtype DType, shape Shape) Tensor {
	return g.Scalar(v, dtype).Expand(shape)
}

// Arange adds the constant [start, start+step, ...) with n elements.
func (g *Graph) Arange(start, step float64, n int, dtype DType) Tensor {
	if n < 0 {
		return g.failf("arange", "negative length %d", n)
	}
	b := make([]byte, n*dtype.Size())
	for i := 0; i < n; i++ {
		if err := putScalar(b[i*dtype.Size():], dtype, start+float64(i)*step); err != nil {
			return g.failf("arange", "%v", err)
		}
	}
	return g.Const(dtype, Shape{n}, b)
}

// Input adds a placeholder whose value is supplied when the program runs
// (Program.Set). Each call makes a distinct input.
func (g *Graph) Input(name string, dtype DType, shape Shape) Tensor {
	if !dtype.Valid() {
		return g.failf("input "+name, "invalid dtype %s", dtype)
	}
	if err := checkShape(shape); err != nil {
		return g.failf("input "+name, "%v", err)
	}
	return g.add(node{op: opInput, dtype: dtype, shape: shape.Clone(), name: name})
}

// InputF32 adds a placeholder already bound to data, which Engine.Eval feeds
// automatically. The data is referenced until the program has read it.
func (g *Graph) InputF32(name string, shape Shape, data []float32) Tensor {
	return g.InputBytes(name, F32, shape, f32Bytes(data))
}

// InputF32Parts adds a placeholder bound to parts whose concatenation, in
// order, is its data (a batch's windows, each the caller's own slice).
// Engine.Eval writes each part where it lies in the input, all in one
// WriteBatch where the queue is a kernels.BatchWriter: where a Concat of
// per-part inputs would cost a copy step per part on the device (32
// windows of Whisper features: 32 launches), and a joined copy on the host
// a pass over all of it before any could be sent.
func (g *Graph) InputF32Parts(name string, shape Shape, parts [][]float32) Tensor {
	t := g.Input(name, F32, shape)
	if t.Err() != nil {
		return t
	}
	n := 0
	bs := make([][]byte, len(parts))
	for i, p := range parts {
		n += len(p)
		bs[i] = f32Bytes(p)
	}
	if n != shape.Len() {
		return g.failf("input "+name, "%s%v needs %d values, its parts hold %d", F32, shape, shape.Len(), n)
	}
	t.node().parts = bs
	return t
}

// InputI64 adds a placeholder already bound to int64 data.
func (g *Graph) InputI64(name string, shape Shape, data []int64) Tensor {
	return g.InputBytes(name, I64, shape, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(data))), 8*len(data)))
}

// InputBytes adds a placeholder bound to raw little-endian bytes.
func (g *Graph) InputBytes(name string, dtype DType, shape Shape, data []byte) Tensor {
	t := g.Input(name, dtype, shape)
	if t.Err() != nil {
		return t
	}
	if want := shape.Len() * dtype.Size(); len(data) != want {
		return g.failf("input "+name, "%s%v needs %d bytes, got %d", dtype, shape, want, len(data))
	}
	t.node().data = data
	return t
}

func f32Bytes(d []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d))), 4*len(d))
}

// putScalar writes v converted to dtype into b.
func putScalar(b []byte, dtype DType, v float64) error {
	switch dtype {
	case F32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case F16:
		binary.LittleEndian.PutUint16(b, kernels.F32ToF16(float32(v)))
	case BF16:
		binary.LittleEndian.PutUint16(b, kernels.F32ToBF16(float32(v)))
	case I32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case I64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case U8:
		b[0] = uint8(v)
	case I8:
		b[0] = uint8(int8(v))
	case Bool:
		if v != 0 {
			b[0] = 1
		} else {
			b[0] = 0
		}
	default:
		return fmt.Errorf("invalid dtype %s", dtype)
	}
	return nil
}
