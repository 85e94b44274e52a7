package weights

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tensorforge/forge/weights/internal/mmap"
	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// Converter turns a model's verified source files into named tensors (src
// maps a file name of the model's entry to its cached path). Each model
// package writes its own, naming the tensors as its PyTorch modules do.
type Converter func(ctx context.Context, src func(name string) string) (*Conversion, error)

// Conversion is a Converter's result: the named tensors, notes on the
// decisions taken (written to the manifest), and where each tensor came
// from in the ONNX graphs (for `models graph`). Tensor data may alias
// mapped source files, which Close releases after the safetensors file is
// written; a converter that fails closes what it made.
type Conversion struct {
	tensors []safetensors.Named
	notes   []string
	closers []func() error
	names   map[string]bool
	// origin maps source file → ONNX value name → the tensor names made
	// from it; file is the ONNX file being converted.
	origin map[string]map[string][]string
	file   string
}

// NewConversion returns an empty conversion.
func NewConversion() *Conversion {
	return &Conversion{names: map[string]bool{}, origin: map[string]map[string][]string{}}
}

// From records that tensor name was made from the ONNX value onnxName of
// the ONNX file opened last.
func (c *Conversion) From(onnxName, name string) {
	m := c.origin[c.file]
	if m == nil {
		m = map[string][]string{}
		c.origin[c.file] = m
	}
	for _, n := range m[onnxName] {
		if n == name {
			return
		}
	}
	m[onnxName] = append(m[onnxName], name)
}

// Close releases the mapped sources.
func (c *Conversion) Close() {
	for _, f := range c.closers {
		f()
	}
	c.closers = nil
}

// Add adds a tensor; its data must hold exactly shape's elements of dt,
// and its name must be new.
func (c *Conversion) Add(name string, dt safetensors.DType, shape []int, data []byte) error {
	if c.names[name] {
		return fmt.Errorf("two tensors named %q", name)
	}
	n := dt.Size()
	for _, d := range shape {
		n *= d
	}
	if n != len(data) {
		return fmt.Errorf("tensor %q: %d bytes for %s%v", name, len(data), dt, shape)
	}
	c.names[name] = true
	c.tensors = append(c.tensors, safetensors.Named{Name: name, Tensor: safetensors.Tensor{DType: dt, Shape: shape, Data: data}})
	return nil
}

// Note records a conversion decision for the manifest.
func (c *Conversion) Note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// OpenONNX maps an ONNX source, closed with the conversion; From refers to
// it until the next one.
func (c *Conversion) OpenONNX(path string) (*onnx.Model, error) {
	m, err := onnx.Open(path)
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, m.Close)
	c.file = filepath.Base(path)
	return m, nil
}

// MapFile maps a raw source file (read-only), closed with the conversion.
func (c *Conversion) MapFile(path string) ([]byte, error) {
	f, err := mmap.Open(path)
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, f.Close)
	return f.Data, nil
}

// DType maps an ONNX element type to safetensors.
func DType(d onnx.DataType) (safetensors.DType, error) {
	switch d {
	case onnx.Float:
		return safetensors.F32, nil
	case onnx.Uint8:
		return safetensors.U8, nil
	case onnx.Int8:
		return safetensors.I8, nil
	case onnx.Int32:
		return safetensors.I32, nil
	case onnx.Int64:
		return safetensors.I64, nil
	case onnx.Float16:
		return safetensors.F16, nil
	case onnx.Double:
		return safetensors.F64, nil
	case onnx.Bool:
		return safetensors.BOOL, nil
	}
	return "", fmt.Errorf("no safetensors dtype for %s", d)
}

// AddQuantized stores an ONNX 8-bit weight with its scale and zero point
// as name, name_scale and name_zero_point (the layout Artifact.Quantized
// reads). A MatMul weight (matmul) is transposed from ONNX's [in,out] to
// PyTorch's [out,in]; a per-output-channel scale (one per column of the
// ONNX matrix) then runs along axis 0, as for convolutions. A [1] scale is
// stored as a scalar.
func (c *Conversion) AddQuantized(name string, q, scale, zp *onnx.Tensor, matmul bool) error {
	dt, err := DType(q.DataType)
	if err != nil {
		return fmt.Errorf("%s: %w", q.Name, err)
	}
	if dt != safetensors.U8 && dt != safetensors.I8 {
		return fmt.Errorf("%s: quantized weight is %s", q.Name, q.DataType)
	}
	if zp.DataType != q.DataType || scale.DataType != onnx.Float || scale.NumElements() != zp.NumElements() {
		return fmt.Errorf("%s: scale %s%v / zero point %s%v do not fit a %s weight", q.Name, scale.DataType, scale.Dims, zp.DataType, zp.Dims, q.DataType)
	}
	shape, data := q.Shape(), q.Raw
	if matmul {
		if len(shape) != 2 {
			return fmt.Errorf("%s: MatMul weight of rank %d", q.Name, len(shape))
		}
		data = Transpose2D(data, shape[0], shape[1], 1)
		shape = []int{shape[1], shape[0]}
	}
	if n := int(scale.NumElements()); n != 1 && (len(shape) == 0 || n != shape[0]) {
		return fmt.Errorf("%s: %d scales for shape %v: only per-tensor or per-output-channel is supported", q.Name, n, shape)
	}
	sshape := scale.Shape()
	if scale.NumElements() == 1 {
		sshape = []int{} // a [1] scale is per tensor too: store it as a scalar
	}
	if err := c.Add(name, dt, shape, data); err != nil {
		return err
	}
	c.From(q.Name, name)
	c.From(scale.Name, name+"_scale")
	c.From(zp.Name, name+"_zero_point")
	if err := c.Add(name+"_scale", safetensors.F32, sshape, scale.Raw); err != nil {
		return err
	}
	return c.Add(name+"_zero_point", dt, sshape, zp.Raw)
}

// Transpose2D returns the [cols, rows] transpose of a row-major [rows,
// cols] matrix of elements of size bytes (ONNX MatMul weights are [in,out],
// PyTorch's [out,in]).
func Transpose2D(data []byte, rows, cols, size int) []byte {
	out := make([]byte, len(data))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			copy(out[(c*rows+r)*size:(c*rows+r+1)*size], data[(r*cols+c)*size:(r*cols+c+1)*size])
		}
	}
	return out
}
