package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// DataType is an ONNX TensorProto.DataType.
type DataType int32

// The ONNX element types. Only the fixed-width ones carry data this package can
// decode; the others are recognised so that errors can name them.
const (
	Undefined  DataType = 0
	Float      DataType = 1
	Uint8      DataType = 2
	Int8       DataType = 3
	Uint16     DataType = 4
	Int16      DataType = 5
	Int32      DataType = 6
	Int64      DataType = 7
	String     DataType = 8
	Bool       DataType = 9
	Float16    DataType = 10
	Double     DataType = 11
	Uint32     DataType = 12
	Uint64     DataType = 13
	Complex64  DataType = 14
	Complex128 DataType = 15
	BFloat16   DataType = 16
)

var dataTypeNames = map[DataType]string{
	Undefined: "undefined", Float: "float32", Uint8: "uint8", Int8: "int8",
	Uint16: "uint16", Int16: "int16", Int32: "int32", Int64: "int64",
	String: "string", Bool: "bool", Float16: "float16", Double: "float64",
	Uint32: "uint32", Uint64: "uint64", Complex64: "complex64",
	Complex128: "complex128", BFloat16: "bfloat16",
}

// String names the type the way numpy would ("float32", "uint8", ...).
func (d DataType) String() string {
	if s, ok := dataTypeNames[d]; ok {
		return s
	}
	return "datatype(" + strconv.Itoa(int(d)) + ")"
}

// Size is the width of one element in bytes, or 0 for types without a fixed
// width (string, undefined, unknown).
func (d DataType) Size() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float, Int32, Uint32:
		return 4
	case Int64, Uint64, Double, Complex64:
		return 8
	case Complex128:
		return 16
	}
	return 0
}

// Tensor is an ONNX TensorProto: an initializer, a Constant's value, or a
// tensor-valued attribute.
type Tensor struct {
	// Name is the tensor's value name; empty for attribute tensors of some
	// exporters.
	Name     string
	DataType DataType
	// Dims is the shape; empty for a scalar.
	Dims []int64
	// Raw holds the elements, little endian, densely packed. When the file
	// stored raw_data (as exporters do for all large tensors) Raw aliases the
	// model's bytes — the mapped file for Open — and is valid until Close.
	// Tensors stored in the typed fields (float_data, int64_data, ...) are
	// re-encoded into a fresh Raw so that every tensor reads the same way.
	Raw []byte
	// Strings holds the elements of a string tensor.
	Strings [][]byte
	// External reports that the data lives in a separate file, which this
	// reader does not follow; Raw is then empty.
	External bool
}

// NumElements is the product of Dims (1 for a scalar).
func (t *Tensor) NumElements() int64 {
	n, _ := numElements(t.Dims)
	return n
}

// Shape returns Dims as ints, the form the rest of Forge uses.
func (t *Tensor) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[i] = int(d)
	}
	return s
}

func numElements(dims []int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in %v", d, dims)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v overflows", dims)
		}
		n *= d
	}
	return n, nil
}

func (t *Tensor) want(dt DataType) error {
	if t.DataType != dt {
		return fmt.Errorf("onnx: tensor %q is %s, not %s", t.Name, t.DataType, dt)
	}
	if t.External {
		return fmt.Errorf("onnx: tensor %q: external data is not supported", t.Name)
	}
	return nil
}

// Float32s copies the elements of a float32 tensor.
func (t *Tensor) Float32s() ([]float32, error) {
	if err := t.want(Float); err != nil {
		return nil, err
	}
	out := make([]float32, len(t.Raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Raw[4*i:]))
	}
	return out, nil
}

// Int64s copies the elements of an int64 tensor.
func (t *Tensor) Int64s() ([]int64, error) {
	if err := t.want(Int64); err != nil {
		return nil, err
	}
	out := make([]int64, len(t.Raw)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Raw[8*i:]))
	}
	return out, nil
}

// Int32s copies the elements of an int32 tensor.
func (t *Tensor) Int32s() ([]int32, error) {
	if err := t.want(Int32); err != nil {
		return nil, err
	}
	out := make([]int32, len(t.Raw)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(t.Raw[4*i:]))
	}
	return out, nil
}

// Uint8s returns the elements of a uint8 tensor (aliasing Raw).
func (t *Tensor) Uint8s() ([]uint8, error) {
	if err := t.want(Uint8); err != nil {
		return nil, err
	}
	return t.Raw, nil
}

// Int8s copies the elements of an int8 tensor.
func (t *Tensor) Int8s() ([]int8, error) {
	if err := t.want(Int8); err != nil {
		return nil, err
	}
	out := make([]int8, len(t.Raw))
	for i, b := range t.Raw {
		out[i] = int8(b)
	}
	return out, nil
}

// AttrType is an ONNX AttributeProto.AttributeType.
type AttrType int32

// The attribute kinds.
const (
	AttrUndefined AttrType = 0
	AttrFloat     AttrType = 1
	AttrInt       AttrType = 2
	AttrString    AttrType = 3
	AttrTensor    AttrType = 4
	AttrGraph     AttrType = 5
	AttrFloats    AttrType = 6
	AttrInts      AttrType = 7
	AttrStrings   AttrType = 8
	AttrTensors   AttrType = 9
	AttrGraphs    AttrType = 10
)

// Attribute is a node attribute. Which field holds the value depends on Type.
type Attribute struct {
	Name    string
	Type    AttrType
	F       float32
	I       int64
	S       []byte
	T       *Tensor
	G       *Graph
	Floats  []float32
	Ints    []int64
	Strings [][]byte
	Tensors []*Tensor
	Graphs  []*Graph
}

// Node is one operator application.
type Node struct {
	Name   string
	OpType string
	Domain string
	// Inputs and Outputs are value names; an empty input name marks an
	// omitted optional input.
	Inputs  []string
	Outputs []string
	Attrs   []Attribute
}

// Attr returns the attribute called name.
func (n *Node) Attr(name string) (*Attribute, bool) {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			return &n.Attrs[i], true
		}
	}
	return nil, false
}

// AttrInt returns an int attribute, or def when it is absent.
func (n *Node) AttrInt(name string, def int64) int64 {
	if a, ok := n.Attr(name); ok && a.Type == AttrInt {
		return a.I
	}
	return def
}

// AttrString returns a string attribute, or def when it is absent.
func (n *Node) AttrString(name, def string) string {
	if a, ok := n.Attr(name); ok && a.Type == AttrString {
		return string(a.S)
	}
	return def
}

// Dim is one dimension of a declared shape: a fixed Value, or a symbolic
// Param such as "batch_size" (Value is then -1).
type Dim struct {
	Value int64
	Param string
}

// String prints a fixed value as its number and a symbolic one as its name.
func (d Dim) String() string {
	if d.Param != "" {
		return d.Param
	}
	if d.Value < 0 {
		return "?"
	}
	return strconv.FormatInt(d.Value, 10)
}

// ValueInfo declares a graph input, output or intermediate value.
type ValueInfo struct {
	Name     string
	ElemType DataType
	// Shape is nil when the file declares none (rank unknown).
	Shape []Dim
}

// Graph is an ONNX GraphProto: the model body or the branch of an If/Loop.
type Graph struct {
	Name         string
	Nodes        []*Node
	Initializers []*Tensor
	Inputs       []ValueInfo
	Outputs      []ValueInfo
	ValueInfo    []ValueInfo
}

// Initializer returns the initializer called name in this graph (not its
// subgraphs or parents).
func (g *Graph) Initializer(name string) (*Tensor, bool) {
	for _, t := range g.Initializers {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Subgraphs returns the graph-valued attributes of the graph's nodes (the
// then/else branches of If, Loop bodies), in node order.
func (g *Graph) Subgraphs() []*Graph {
	var out []*Graph
	for _, n := range g.Nodes {
		for i := range n.Attrs {
			a := &n.Attrs[i]
			if a.G != nil {
				out = append(out, a.G)
			}
			out = append(out, a.Graphs...)
		}
	}
	return out
}

// Walk calls fn for g and, depth first, for every nested subgraph. path names
// the graph by the chain of If/Loop nodes and attributes that lead to it
// ("" for g itself, "/If_0:then_branch" below).
func (g *Graph) Walk(fn func(path string, g *Graph)) {
	g.walk("", fn)
}

func (g *Graph) walk(path string, fn func(string, *Graph)) {
	fn(path, g)
	for _, n := range g.Nodes {
		for i := range n.Attrs {
			a := &n.Attrs[i]
			if a.G != nil {
				a.G.walk(path+n.Name+":"+a.Name+"/", fn)
			}
			for j, sg := range a.Graphs {
				sg.walk(path+n.Name+":"+a.Name+"["+strconv.Itoa(j)+"]/", fn)
			}
		}
	}
}

// Opset is one imported operator set.
type Opset struct {
	Domain  string
	Version int64
}

// Model is an ONNX ModelProto.
type Model struct {
	IRVersion       int64
	Opsets          []Opset
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	Metadata        map[string]string
	Graph           *Graph

	close func() error
}

// Close releases the mapped file behind a model from Open. Tensor Raw slices
// must not be used afterwards. It is a no-op for models from Parse.
func (m *Model) Close() error {
	if m == nil || m.close == nil {
		return nil
	}
	c := m.close
	m.close = nil
	return c()
}
