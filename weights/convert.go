package weights

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// converter turns a model's verified source files (src maps a file name to
// its cached path) into named tensors.
type converter func(ctx context.Context, src func(name string) string) (*conversion, error)

// conversion is a converter's result. Tensor data may alias mapped source
// files, which close releases after the safetensors file is written.
type conversion struct {
	tensors []safetensors.Named
	notes   []string
	closers []func() error
	names   map[string]bool
	// origin maps source file → ONNX value name → the tensor names made
	// from it, so that `models graph` can show converted names in the
	// graph; file is the ONNX file being converted.
	origin map[string]map[string][]string
	file   string
}

func newConversion() *conversion {
	return &conversion{names: map[string]bool{}, origin: map[string]map[string][]string{}}
}

// from records that tensor name was made from the ONNX value onnxName of
// the current file.
func (c *conversion) from(onnxName, name string) {
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

func (c *conversion) close() {
	for _, f := range c.closers {
		f()
	}
	c.closers = nil
}

func (c *conversion) add(name string, dt safetensors.DType, shape []int, data []byte) error {
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

func (c *conversion) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// openONNX maps an ONNX source and registers it for closing.
func (c *conversion) openONNX(path string) (*onnx.Model, error) {
	m, err := onnx.Open(path)
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, m.Close)
	c.file = filepath.Base(path)
	return m, nil
}

// stDType maps an ONNX element type to safetensors.
func stDType(d onnx.DataType) (safetensors.DType, error) {
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

// use is one consumption of a value: node n reads it as input idx.
type use struct {
	n   *onnx.Node
	idx int
}

// graphIndex indexes a model's graph and all nested subgraphs: every
// constant tensor (initializers and Constant nodes' values) by value name,
// who consumes each value, and who produces it.
type graphIndex struct {
	consts    map[string]*onnx.Tensor
	order     []string // constant names in file order
	consumers map[string][]use
	producer  map[string]*onnx.Node
}

func indexGraph(g *onnx.Graph) *graphIndex {
	ix := &graphIndex{consts: map[string]*onnx.Tensor{}, consumers: map[string][]use{}, producer: map[string]*onnx.Node{}}
	g.Walk(func(_ string, g *onnx.Graph) {
		for _, t := range g.Initializers {
			if _, dup := ix.consts[t.Name]; !dup {
				ix.order = append(ix.order, t.Name)
			}
			ix.consts[t.Name] = t
		}
		for _, n := range g.Nodes {
			for i, in := range n.Inputs {
				if in != "" {
					ix.consumers[in] = append(ix.consumers[in], use{n, i})
				}
			}
			for _, out := range n.Outputs {
				ix.producer[out] = n
			}
			if n.OpType == "Constant" && len(n.Outputs) == 1 {
				if a, ok := n.Attr("value"); ok && a.T != nil {
					if _, dup := ix.consts[n.Outputs[0]]; !dup {
						ix.order = append(ix.order, n.Outputs[0])
					}
					ix.consts[n.Outputs[0]] = a.T
				}
			}
		}
	})
	return ix
}

// usesBy returns the uses of value by nodes of the given op types.
func (ix *graphIndex) usesBy(value string, ops ...string) []use {
	var out []use
	for _, u := range ix.consumers[value] {
		for _, op := range ops {
			if u.n.OpType == op {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// scope turns a node name such as "/model/decoder/layers.0/self_attn/q_proj/MatMul_quant"
// into its module path "model.decoder.layers.0.self_attn.q_proj": the
// components between the leading "/" and the op name. The exporter's
// de-duplication suffixes on module names ("query_1" for the second call
// of a shared module) are kept; callers that want them gone say so.
func scope(nodeName string) string {
	i := strings.Index(nodeName, "/")
	j := strings.LastIndex(nodeName, "/")
	if i < 0 || j <= i {
		return ""
	}
	return strings.ReplaceAll(nodeName[i+1:j], "/", ".")
}

// transpose2D returns the [cols, rows] transpose of a row-major [rows, cols]
// matrix of elements of size bytes.
func transpose2D(data []byte, rows, cols, size int) []byte {
	out := make([]byte, len(data))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			copy(out[(c*rows+r)*size:(c*rows+r+1)*size], data[(r*cols+c)*size:(r*cols+c+1)*size])
		}
	}
	return out
}

// unused lists the float constants of more than minElems elements that no
// rule claimed, for the conversion notes (a rule that misses a real weight
// shows up here).
func (ix *graphIndex) unused(claimed map[string]bool, minElems int64) []string {
	var out []string
	for _, name := range ix.order {
		t := ix.consts[name]
		if claimed[name] || t.DataType != onnx.Float || t.NumElements() < minElems {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s%v", name, t.DataType, t.Dims))
	}
	sort.Strings(out)
	return out
}
