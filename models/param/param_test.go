package param

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/weights/safetensors"
)

// table is a Source over a map, as a test's stand-in for an artifact.
type table map[string]safetensors.Tensor

func (t table) Tensor(name string) (safetensors.Tensor, error) {
	if v, ok := t[name]; ok {
		return v, nil
	}
	return safetensors.Tensor{}, fmt.Errorf("no tensor %q", name)
}

func f32(shape ...int) safetensors.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return safetensors.Tensor{DType: safetensors.F32, Shape: shape, Data: make([]byte, 4*n)}
}

func u8(shape ...int) safetensors.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return safetensors.Tensor{DType: safetensors.U8, Shape: shape, Data: make([]byte, n)}
}

var src = table{
	"encoder.layers.0.fc1.weight":            f32(8, 4),
	"encoder.layers.0.fc1.bias":              f32(8),
	"encoder.layers.0.q.weight":              u8(4, 4),
	"encoder.layers.0.q.weight_scale":        f32(),
	"encoder.layers.0.q.weight_zero_point":   u8(),
	"encoder.layers.0.bad.weight":            u8(4, 4),
	"encoder.layers.0.bad.weight_scale":      f32(),
	"encoder.layers.0.bad.weight_zero_point": safetensors.Tensor{DType: safetensors.I8, Shape: []int{}, Data: []byte{0}},
	"encoder.pos":                            {DType: safetensors.F16, Shape: []int{2}, Data: make([]byte, 4)},
}

func TestScope(t *testing.T) {
	layer := func(s *Scope) *Scope { return s.Sub("encoder").Sub("layers").Index(0) }
	for _, c := range []struct {
		name string
		read func(s *Scope) Tensor
		want string // the tensor's full name, or the error's text
		err  error
	}{
		{"nested name", func(s *Scope) Tensor { return layer(s).F32("fc1.weight", 8, 4) }, "encoder.layers.0.fc1.weight", nil},
		{"wildcard", func(s *Scope) Tensor { return layer(s).Sub("fc1").F32("weight", -1, 4) }, "encoder.layers.0.fc1.weight", nil},
		{"quantized", func(s *Scope) Tensor { return layer(s).Quantized("q.weight", 4, 4).Zero }, "encoder.layers.0.q.weight_zero_point", nil},
		{"missing", func(s *Scope) Tensor { return layer(s).F32("fc2.weight", 8, 4) },
			`test: missing tensor "encoder.layers.0.fc2.weight"`, ErrMissing},
		{"shape", func(s *Scope) Tensor { return layer(s).F32("fc1.bias", 4) },
			`test: tensor does not fit: "encoder.layers.0.fc1.bias" has shape [8], want [4]`, ErrMismatch},
		{"rank", func(s *Scope) Tensor { return layer(s).F32("fc1.bias", -1, -1) },
			`"encoder.layers.0.fc1.bias" has shape [8], want [-1 -1]`, ErrMismatch},
		{"dtype", func(s *Scope) Tensor { return layer(s).F32("q.weight", 4, 4) },
			`"encoder.layers.0.q.weight" is U8, want F32`, ErrMismatch},
		{"unknown dtype", func(s *Scope) Tensor { return s.Sub("encoder").F32("pos", 2) },
			`"encoder.pos" is F16, want F32`, ErrMismatch},
		{"zero point type", func(s *Scope) Tensor { return layer(s).Quantized("bad.weight", 4, 4).Q },
			`"encoder.layers.0.bad.weight_zero_point" is I8, want U8`, ErrMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(src, "test")
			got := c.read(s)
			err := s.Err()
			if c.err == nil {
				if err != nil || got.Name != c.want {
					t.Fatalf("read %q, %v; want %q", got.Name, err, c.want)
				}
				return
			}
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %v containing %q", err, c.err, c.want)
			}
		})
	}
}

// TestFirstErrorKept: after a failure every read returns the zero Tensor
// and Err keeps naming the first failure, shared by all scopes of a New.
func TestFirstErrorKept(t *testing.T) {
	s := New(src, "test")
	enc := s.Sub("encoder")
	enc.F32("nothing")
	if got := enc.Sub("layers").Index(0).F32("fc1.bias", 8); got.Valid() {
		t.Errorf("read %q after a failure", got.Name)
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `"encoder.nothing"`) {
		t.Errorf("root scope's error %v, want the first failure", err)
	}
}

func TestTensorIn(t *testing.T) {
	s := New(src, "test")
	w := s.F32("encoder.layers.0.fc1.weight", 8, 4)
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	if n := len(w.Float32s()); n != 32 {
		t.Errorf("Float32s holds %d values, want 32", n)
	}
	g := graph.New()
	p := w.In(g)
	if err := p.Err(); err != nil || !p.Shape().Equal(graph.Shape{8, 4}) || p.DType() != graph.F32 {
		t.Errorf("In: %v %v %v", p.Shape(), p.DType(), err)
	}
	if !s.Has("encoder.layers.0.fc1.bias") || s.Has("encoder.layers.0.fc9.bias") {
		t.Error("Has disagrees with the source")
	}
}
