// Package param binds a model's weights to graph parameters by their
// PyTorch names: the one way Forge's models read their tensors.
//
// A Scope is a position in the module tree, as PyTorch's state_dict names
// it: the root scope of Whisper's artifact, Sub("encoder"), Sub("layers"),
// Index(0), Sub("self_attn") reads "encoder.layers.0.self_attn.q_proj.weight"
// when its module asks for F32("q_proj.weight", ...). Each module type's
// constructor takes the scope of its module, so the Go tree reads like the
// PyTorch one (candle's VarBuilder does the same).
//
// A scope checks every tensor as it is read — present, of the wanted
// element type, of the wanted shape (−1 accepts any size on its axis) —
// and keeps the first failure, named by the tensor's full name, for Err:
// constructors read everything and check once at the end, instead of
// threading an error through every line. The tensors are held by reference
// (they alias the artifact's mapped file) and become graph parameters with
// Tensor.In each time a graph is built.
package param

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/weights/safetensors"
)

// Errors a scope reports (wrapped with the tensor's full name).
var (
	// ErrMissing: the source has no tensor of that name.
	ErrMissing = errors.New("missing tensor")
	// ErrMismatch: the tensor's element type or shape is not the module's.
	ErrMismatch = errors.New("tensor does not fit")
)

// Source gives tensors by full name; *weights.Artifact is one. Any error
// counts as a missing tensor.
type Source interface {
	Tensor(name string) (safetensors.Tensor, error)
}

// Tensor is one weight by reference: its full name, element type, shape
// and bytes (aliasing the source; read-only). The zero Tensor stands for
// an optional weight the module does not have (see Valid).
type Tensor struct {
	Name  string
	DType graph.DType
	Shape graph.Shape
	Data  []byte
}

// In adds the tensor to g as a parameter (by reference; a graph that sees
// the same tensor twice holds one node).
func (t Tensor) In(g *graph.Graph) graph.Tensor { return g.Param(t.Name, t.DType, t.Shape, t.Data) }

// Valid reports whether t was read (false for the zero Tensor).
func (t Tensor) Valid() bool { return t.Name != "" }

// Float32s returns an F32 tensor's elements (aliasing Data: read-only);
// nil for another element type.
func (t Tensor) Float32s() []float32 {
	if t.DType != graph.F32 || len(t.Data) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(t.Data))), len(t.Data)/4)
}

// Quantized is an 8-bit weight with one scale and zero point for the whole
// tensor: w = (Q − Zero)·Scale, as the ONNX exports' dynamic quantization
// stores it.
type Quantized struct {
	Q, Scale, Zero Tensor
}

// Dequantized returns the float32 weight. It depends on weights only, so
// the engine computes it once and caches it.
func (q Quantized) Dequantized(g *graph.Graph) graph.Tensor {
	return q.Q.In(g).Dequantize(q.Scale.In(g), q.Zero.In(g))
}

// Scope reads tensors under a name prefix. Scopes made from one New share
// their first error.
type Scope struct {
	src    Source
	prefix string
	st     *state
}

// state is what the scopes of one New share.
type state struct {
	owner string // for messages: "whisper: whisper-tiny"
	err   error
}

// New returns the root scope of src; owner names the weights in messages
// ("whisper: whisper-tiny").
func New(src Source, owner string) *Scope {
	return &Scope{src: src, st: &state{owner: owner}}
}

// Sub returns the scope of the child module name ("encoder", "layers",
// "self_attn"; "a.b" descends twice).
func (s *Scope) Sub(name string) *Scope {
	return &Scope{src: s.src, prefix: s.prefix + name + ".", st: s.st}
}

// Index returns the scope of item i of a module list (nn.ModuleList,
// nn.Sequential): Sub("layers").Index(0) is "layers.0".
func (s *Scope) Index(i int) *Scope { return s.Sub(strconv.Itoa(i)) }

// Name returns the full name of the scope's tensor name.
func (s *Scope) Name(name string) string { return s.prefix + name }

// Err returns the first failure of any scope of this New, or nil.
func (s *Scope) Err() error { return s.st.err }

// Has reports whether the source holds the scope's tensor name, for
// weights that some exports leave out.
func (s *Scope) Has(name string) bool {
	_, err := s.src.Tensor(s.Name(name))
	return err == nil
}

// F32 reads a float32 tensor of the given shape.
func (s *Scope) F32(name string, shape ...int) Tensor {
	return s.Tensor(name, graph.F32, shape...)
}

// Tensor reads the tensor name, which must have element type dt and the
// given shape (a −1 accepts any size on its axis). After a failure it
// returns the zero Tensor and Err reports the failure.
func (s *Scope) Tensor(name string, dt graph.DType, shape ...int) Tensor {
	return s.read(name, shape, func(got graph.DType) bool { return got == dt }, strings.ToUpper(dt.String()))
}

// Quantized reads an 8-bit weight name (U8 or I8) of the given shape with
// its per-tensor companions name+"_scale" (F32) and name+"_zero_point" (of
// the weight's type), both scalars.
func (s *Scope) Quantized(name string, shape ...int) Quantized {
	q := s.read(name, shape, func(got graph.DType) bool { return got == graph.U8 || got == graph.I8 }, "U8 or I8")
	if !q.Valid() {
		return Quantized{}
	}
	return Quantized{Q: q, Scale: s.F32(name + "_scale"), Zero: s.Tensor(name+"_zero_point", q.DType)}
}

// read reads and checks one tensor; ok says which element types fit and
// want names them for messages.
func (s *Scope) read(name string, shape []int, ok func(graph.DType) bool, want string) Tensor {
	if s.st.err != nil {
		return Tensor{}
	}
	full := s.Name(name)
	t, err := s.src.Tensor(full)
	if err != nil {
		return s.fail(fmt.Errorf("%s: %w %q", s.st.owner, ErrMissing, full))
	}
	dt, known := dtypeOf(t.DType)
	if !known || !ok(dt) {
		return s.fail(fmt.Errorf("%s: %w: %q is %s, want %s", s.st.owner, ErrMismatch, full, t.DType, want))
	}
	if !fits(t.Shape, shape) {
		return s.fail(fmt.Errorf("%s: %w: %q has shape %v, want %v", s.st.owner, ErrMismatch, full, t.Shape, shape))
	}
	data := t.Data
	if dt == graph.F32 {
		// An aligned view of the mapped bytes (a copy only where the file
		// misaligns them), so that the kernels read whole float32s.
		v, err := t.Float32s()
		if err != nil {
			return s.fail(fmt.Errorf("%s: %q: %w", s.st.owner, full, err))
		}
		data = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
	}
	return Tensor{Name: full, DType: dt, Shape: graph.Shape(t.Shape).Clone(), Data: data}
}

func (s *Scope) fail(err error) Tensor {
	if s.st.err == nil {
		s.st.err = err
	}
	return Tensor{}
}

// fits reports whether got matches want, where −1 matches any size.
func fits(got, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		if w != -1 && got[i] != w {
			return false
		}
	}
	return true
}

// dtypeOf maps the element types models read to the graph's.
func dtypeOf(d safetensors.DType) (graph.DType, bool) {
	switch d {
	case safetensors.F32:
		return graph.F32, true
	case safetensors.U8:
		return graph.U8, true
	case safetensors.I8:
		return graph.I8, true
	case safetensors.I64:
		return graph.I64, true
	}
	return 0, false
}
