package weights

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/forge/weights/safetensors"
)

// Artifact is an opened model: its named tensors (mapped, zero copy) and its
// side files (tokenizer, configs, the source ONNX graphs).
type Artifact struct {
	ID       string
	Dir      string
	Manifest Manifest
	// Weights holds the converted tensors; nil for models without any.
	Weights *safetensors.File
}

// Open opens a model that Ensure has made ready. It does not fetch: an
// absent model is ErrNotReady, with what to run. Every file of the model
// whose identity changed since it was last verified is hashed first; a
// corrupt one is an error wrapping ErrCorrupt that names it (Ensure, or
// `models fetch`, repairs it).
func (c *Cache) Open(id string) (*Artifact, error) {
	if _, err := Lookup(id); err != nil {
		return nil, err
	}
	m, man, ok := c.complete(id)
	if !ok {
		return nil, fmt.Errorf("weights: %s: %w under %s (run `make models` or `go run ./cmd/models fetch %s`)", id, ErrNotReady, c.Root, id)
	}
	bad, err := c.verify(id, c.cachedFiles(m, man), false)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		errs := make([]error, 0, len(bad)+1)
		for _, d := range bad {
			errs = append(errs, d.err)
		}
		errs = append(errs, fmt.Errorf("weights: run `go run ./cmd/models fetch %s` to repair %s", id, id))
		return nil, errors.Join(errs...)
	}
	a := &Artifact{ID: id, Dir: c.dir(id), Manifest: *man}
	if m.Convert != nil {
		f, err := safetensors.Open(c.weightsPath(id))
		if err != nil {
			return nil, fmt.Errorf("weights: %s: %w", id, err)
		}
		a.Weights = f
	}
	return a, nil
}

// Close releases the mapped weights. Slices obtained from the artifact must
// not be used afterwards.
func (a *Artifact) Close() error {
	if a == nil || a.Weights == nil {
		return nil
	}
	return a.Weights.Close()
}

// Names lists the tensors, sorted.
func (a *Artifact) Names() []string {
	if a.Weights == nil {
		return nil
	}
	return a.Weights.Names()
}

// Tensor returns the tensor called name; a missing name is an error that
// says which model lacked it.
func (a *Artifact) Tensor(name string) (safetensors.Tensor, error) {
	if a.Weights != nil {
		if t, ok := a.Weights.Tensor(name); ok {
			return t, nil
		}
	}
	return safetensors.Tensor{}, fmt.Errorf("weights: %s has no tensor %q", a.ID, name)
}

// Float32s returns an F32 tensor's elements (aliasing the mapped file:
// read-only) and its shape.
func (a *Artifact) Float32s(name string) ([]float32, []int, error) {
	t, err := a.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	v, err := t.Float32s()
	if err != nil {
		return nil, nil, fmt.Errorf("weights: %s %q: %w", a.ID, name, err)
	}
	return v, t.Shape, nil
}

// Quantized is an int8 or uint8 weight with its dequantization parameters:
// w = (Q − ZeroPoint)·Scale. Scale and ZeroPoint hold one element (per
// tensor) or Shape[0] elements (per output channel: row o of an [out,in]
// matrix, filter o of an [out,in,k] convolution).
type Quantized struct {
	Name      string
	Q         safetensors.Tensor
	Scale     []float32
	ZeroPoint []int32
}

// PerChannel reports whether the scale varies along axis 0.
func (q *Quantized) PerChannel() bool { return len(q.Scale) > 1 }

// Quantized returns the quantized weight name (e.g.
// "encoder.layers.0.fc1.weight", stored U8 or I8) with its
// name+"_scale" and name+"_zero_point" companions.
func (a *Artifact) Quantized(name string) (*Quantized, error) {
	q, err := a.Tensor(name)
	if err != nil {
		return nil, err
	}
	if q.DType != safetensors.U8 && q.DType != safetensors.I8 {
		return nil, fmt.Errorf("weights: %s %q is %s, not quantized", a.ID, name, q.DType)
	}
	scale, _, err := a.Float32s(name + "_scale")
	if err != nil {
		return nil, err
	}
	zt, err := a.Tensor(name + "_zero_point")
	if err != nil {
		return nil, err
	}
	if zt.DType != q.DType {
		return nil, fmt.Errorf("weights: %s %q: zero point is %s, weight %s", a.ID, name, zt.DType, q.DType)
	}
	zp := make([]int32, len(zt.Data))
	for i, b := range zt.Data {
		if zt.DType == safetensors.I8 {
			zp[i] = int32(int8(b))
		} else {
			zp[i] = int32(b)
		}
	}
	rows := 1
	if len(q.Shape) > 0 {
		rows = q.Shape[0]
	}
	if len(scale) != len(zp) || (len(scale) != 1 && len(scale) != rows) {
		return nil, fmt.Errorf("weights: %s %q: %d scales and %d zero points for shape %v", a.ID, name, len(scale), len(zp), q.Shape)
	}
	return &Quantized{Name: name, Q: q, Scale: scale, ZeroPoint: zp}, nil
}

// Dequantize returns (q − zp)·scale as a new float32 slice, in the stored
// [out, ...] layout. Each element is computed as float32(q−zp) * scale, the
// same single rounding onnxruntime's DequantizeLinear performs.
func (q *Quantized) Dequantize() []float32 {
	n := len(q.Q.Data)
	out := make([]float32, n)
	rows := len(q.Scale)
	if rows == 0 {
		return out
	}
	per := n / rows
	signed := q.Q.DType == safetensors.I8
	for c := 0; c < rows; c++ {
		s, z := q.Scale[c], q.ZeroPoint[c]
		src, dst := q.Q.Data[c*per:(c+1)*per], out[c*per:(c+1)*per]
		if signed {
			for i, b := range src {
				dst[i] = float32(int32(int8(b))-z) * s
			}
		} else {
			for i, b := range src {
				dst[i] = float32(int32(b)-z) * s
			}
		}
	}
	return out
}

// Dequantize is a shortcut for Quantized(name) followed by Dequantize.
func (a *Artifact) Dequantize(name string) ([]float32, []int, error) {
	q, err := a.Quantized(name)
	if err != nil {
		return nil, nil, err
	}
	return q.Dequantize(), q.Q.Shape, nil
}

// Path returns the cached path of a side file such as "tokenizer.json",
// "config.json" or the source "encoder_model_quantized.onnx".
func (a *Artifact) Path(file string) (string, error) {
	m, err := Lookup(a.ID)
	if err != nil {
		return "", err
	}
	for _, f := range m.Files {
		if f.Name == file {
			return filepath.Join(a.Dir, "src", f.Name), nil
		}
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	if len(names) > 8 {
		names = append(names[:8], "…")
	}
	return "", fmt.Errorf("weights: %s has no file %q (has %s)", a.ID, file, strings.Join(names, ", "))
}

// ReadFile reads a side file (see Path).
func (a *Artifact) ReadFile(file string) ([]byte, error) {
	p, err := a.Path(file)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", a.ID, err)
	}
	return b, nil
}
