package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tensorforge/forge/weights/internal/mmap"
)

// maxDepth bounds graph nesting (If inside If inside ...). Real models nest a
// few levels; the bound keeps hostile input from recursing without limit.
const maxDepth = 32

// Open maps the ONNX file at path and parses it. Raw tensor data is not
// copied: it aliases the mapping, which Close releases.
func Open(path string) (*Model, error) {
	f, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	m, err := Parse(f.Data)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("onnx %s: %w", path, err)
	}
	m.close = f.Close
	return m, nil
}

// Parse decodes a serialized ModelProto. Raw tensor data in the result aliases
// b. Every size in the file is checked against len(b) before anything is
// allocated, so arbitrary input yields an error, never a panic or a huge
// allocation.
func Parse(b []byte) (*Model, error) {
	p := &parser{budget: 16*int64(len(b)) + 1<<20}
	m := &Model{}
	err := eachField(b, func(f field) error {
		switch f.num {
		case 1:
			m.IRVersion = int64(f.v)
		case 2:
			m.ProducerName = string(f.b)
		case 3:
			m.ProducerVersion = string(f.b)
		case 4:
			m.Domain = string(f.b)
		case 5:
			m.ModelVersion = int64(f.v)
		case 6:
			m.DocString = string(f.b)
		case 7:
			if f.typ != protowire.BytesType {
				return errWire("graph")
			}
			g, err := p.parseGraph(f.b, 0)
			if err != nil {
				return fmt.Errorf("graph: %w", err)
			}
			m.Graph = g
		case 8:
			if f.typ != protowire.BytesType {
				return errWire("opset_import")
			}
			var o Opset
			err := eachField(f.b, func(f field) error {
				switch f.num {
				case 1:
					o.Domain = string(f.b)
				case 2:
					o.Version = int64(f.v)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("opset_import: %w", err)
			}
			m.Opsets = append(m.Opsets, o)
		case 14:
			if f.typ != protowire.BytesType {
				return errWire("metadata_props")
			}
			var k, v string
			err := eachField(f.b, func(f field) error {
				switch f.num {
				case 1:
					k = string(f.b)
				case 2:
					v = string(f.b)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("metadata_props: %w", err)
			}
			if m.Metadata == nil {
				m.Metadata = map[string]string{}
			}
			m.Metadata[k] = v
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if m.Graph == nil {
		return nil, errors.New("onnx: model has no graph")
	}
	return m, nil
}

func (p *parser) parseGraph(b []byte, depth int) (*Graph, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("subgraphs nested deeper than %d", maxDepth)
	}
	g := &Graph{}
	err := eachField(b, func(f field) error {
		if f.num != 2 && f.typ != protowire.BytesType {
			// Every GraphProto field but name (also bytes) is a message.
			return nil
		}
		switch f.num {
		case 1:
			n, err := p.parseNode(f.b, depth)
			if err != nil {
				return fmt.Errorf("node %d: %w", len(g.Nodes), err)
			}
			g.Nodes = append(g.Nodes, n)
		case 2:
			g.Name = string(f.b)
		case 5:
			t, err := p.parseTensor(f.b)
			if err != nil {
				return fmt.Errorf("initializer %d: %w", len(g.Initializers), err)
			}
			g.Initializers = append(g.Initializers, t)
		case 11, 12, 13:
			v, err := p.parseValueInfo(f.b)
			if err != nil {
				return fmt.Errorf("value_info: %w", err)
			}
			switch f.num {
			case 11:
				g.Inputs = append(g.Inputs, v)
			case 12:
				g.Outputs = append(g.Outputs, v)
			default:
				g.ValueInfo = append(g.ValueInfo, v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (p *parser) parseNode(b []byte, depth int) (*Node, error) {
	if err := p.spend(nodeCost); err != nil {
		return nil, err
	}
	n := &Node{}
	err := eachField(b, func(f field) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 1:
			n.Inputs = append(n.Inputs, string(f.b))
		case 2:
			n.Outputs = append(n.Outputs, string(f.b))
		case 3:
			n.Name = string(f.b)
		case 4:
			n.OpType = string(f.b)
		case 7:
			n.Domain = string(f.b)
		case 5:
			a, err := p.parseAttribute(f.b, depth)
			if err != nil {
				return fmt.Errorf("attribute %d: %w", len(n.Attrs), err)
			}
			n.Attrs = append(n.Attrs, a)
		}
		return nil
	})
	if err != nil {
		if n.Name != "" {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil, err
	}
	return n, nil
}

func (p *parser) parseAttribute(b []byte, depth int) (Attribute, error) {
	var a Attribute
	if err := p.spend(attrCost); err != nil {
		return a, err
	}
	err := eachField(b, func(f field) error {
		switch f.num {
		case 1:
			a.Name = string(f.b)
		case 20:
			a.Type = AttrType(f.v)
		case 2:
			if f.typ != protowire.Fixed32Type {
				return errWire("attribute f")
			}
			a.F = math.Float32frombits(uint32(f.v))
		case 3:
			a.I = int64(f.v)
		case 4:
			a.S = f.b
		case 5:
			if f.typ != protowire.BytesType {
				return errWire("attribute t")
			}
			t, err := p.parseTensor(f.b)
			if err != nil {
				return err
			}
			a.T = t
		case 6:
			if f.typ != protowire.BytesType {
				return errWire("attribute g")
			}
			g, err := p.parseGraph(f.b, depth+1)
			if err != nil {
				return err
			}
			a.G = g
		case 7:
			return appendFloat32s(&a.Floats, f)
		case 8:
			return appendVarints(&a.Ints, f, func(v uint64) int64 { return int64(v) })
		case 9:
			if f.typ != protowire.BytesType {
				return errWire("attribute strings")
			}
			a.Strings = append(a.Strings, f.b)
		case 10:
			if f.typ != protowire.BytesType {
				return errWire("attribute tensors")
			}
			t, err := p.parseTensor(f.b)
			if err != nil {
				return err
			}
			a.Tensors = append(a.Tensors, t)
		case 11:
			if f.typ != protowire.BytesType {
				return errWire("attribute graphs")
			}
			g, err := p.parseGraph(f.b, depth+1)
			if err != nil {
				return err
			}
			a.Graphs = append(a.Graphs, g)
		}
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("%q: %w", a.Name, err)
	}
	return a, nil
}

func (p *parser) parseValueInfo(b []byte) (ValueInfo, error) {
	var v ValueInfo
	if err := p.spend(attrCost); err != nil {
		return v, err
	}
	err := eachField(b, func(f field) error {
		switch f.num {
		case 1:
			v.Name = string(f.b)
		case 2: // TypeProto
			if f.typ != protowire.BytesType {
				return errWire("type")
			}
			return eachField(f.b, func(f field) error {
				if f.num != 1 || f.typ != protowire.BytesType { // tensor_type only
					return nil
				}
				return eachField(f.b, func(f field) error {
					switch f.num {
					case 1:
						v.ElemType = DataType(f.v)
					case 2:
						if f.typ != protowire.BytesType {
							return errWire("shape")
						}
						v.Shape = []Dim{}
						return eachField(f.b, func(f field) error {
							if f.num != 1 || f.typ != protowire.BytesType {
								return nil
							}
							if err := p.spend(16); err != nil {
								return err
							}
							d := Dim{Value: -1}
							err := eachField(f.b, func(f field) error {
								switch f.num {
								case 1:
									d.Value = int64(f.v)
								case 2:
									d.Param = string(f.b)
								}
								return nil
							})
							v.Shape = append(v.Shape, d)
							return err
						})
					}
					return nil
				})
			})
		}
		return nil
	})
	return v, err
}

func (p *parser) parseTensor(b []byte) (*Tensor, error) {
	if err := p.spend(tensorCost); err != nil {
		return nil, err
	}
	t := &Tensor{}
	var (
		raw                     []byte
		hasRaw                  bool
		floats                  []float32
		int32s, int64s, uint64s []int64
		doubles                 []float64
		typedCount              int
	)
	err := eachField(b, func(f field) error {
		switch f.num {
		case 1:
			return appendVarints(&t.Dims, f, func(v uint64) int64 { return int64(v) })
		case 2:
			t.DataType = DataType(f.v)
		case 8:
			t.Name = string(f.b)
		case 9:
			if f.typ != protowire.BytesType {
				return errWire("raw_data")
			}
			raw, hasRaw = f.b, true
		case 4:
			typedCount++
			return appendFloat32s(&floats, f)
		case 5:
			typedCount++
			return appendVarints(&int32s, f, func(v uint64) int64 { return int64(int32(v)) })
		case 7:
			typedCount++
			return appendVarints(&int64s, f, func(v uint64) int64 { return int64(v) })
		case 11:
			typedCount++
			return appendVarints(&uint64s, f, func(v uint64) int64 { return int64(v) })
		case 10:
			typedCount++
			return appendFloat64s(&doubles, f)
		case 6:
			if f.typ != protowire.BytesType {
				return errWire("string_data")
			}
			t.Strings = append(t.Strings, f.b)
		case 14:
			t.External = f.v == 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	n, err := numElements(t.Dims)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if t.External || t.DataType == String {
		return t, nil
	}
	size := int64(t.DataType.Size())
	if size == 0 {
		return nil, fmt.Errorf("tensor %q: unsupported data type %s", t.Name, t.DataType)
	}
	// Compare in element counts first: n*size may overflow for hostile dims.
	if hasRaw {
		if int64(len(raw))%size != 0 || int64(len(raw))/size != n {
			return nil, fmt.Errorf("tensor %q: raw_data holds %d bytes, shape %v of %s needs %d elements",
				t.Name, len(raw), t.Dims, t.DataType, n)
		}
		t.Raw = raw
		return t, nil
	}
	var got int64
	switch t.DataType {
	case Float, Complex64:
		got = int64(len(floats))
		if t.DataType == Complex64 {
			got /= 2
		}
	case Double, Complex128:
		got = int64(len(doubles))
		if t.DataType == Complex128 {
			got /= 2
		}
	case Int64:
		got = int64(len(int64s))
	case Uint32, Uint64:
		got = int64(len(uint64s))
	default: // the narrow types travel in int32_data
		got = int64(len(int32s))
	}
	if got != n {
		return nil, fmt.Errorf("tensor %q: typed data holds %d elements, shape %v of %s needs %d",
			t.Name, got, t.Dims, t.DataType, n)
	}
	out := make([]byte, 0, n*size) // bounded: n elements were decoded from b
	switch t.DataType {
	case Float, Complex64:
		for _, v := range floats {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	case Double, Complex128:
		for _, v := range doubles {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	case Int64:
		for _, v := range int64s {
			out = binary.LittleEndian.AppendUint64(out, uint64(v))
		}
	case Uint32:
		for _, v := range uint64s {
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		}
	case Uint64:
		for _, v := range uint64s {
			out = binary.LittleEndian.AppendUint64(out, uint64(v))
		}
	case Int32:
		for _, v := range int32s {
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		}
	default:
		for _, v := range int32s {
			switch size {
			case 1:
				out = append(out, byte(v))
			case 2:
				out = binary.LittleEndian.AppendUint16(out, uint16(v))
			}
		}
	}
	t.Raw = out
	return t, nil
}

// field is one decoded protobuf field: v holds varint and fixed values, b the
// payload of length-delimited ones (aliasing the input).
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

func eachField(b []byte, fn func(field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default: // groups and reserved types: skip, never interpret
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func errWire(what string) error {
	return fmt.Errorf("%s: unexpected wire type", what)
}

// parser carries the allocation budget of one Parse call. Every decoded
// node, attribute, tensor and repeated number is charged against it, so
// that hostile input made of many tiny messages cannot make the reader
// allocate far more than the file's size.
type parser struct {
	budget int64
}

// Rough heap costs of the decoded structures, in bytes.
const (
	nodeCost   = 256
	attrCost   = 192
	tensorCost = 192
)

var errBudget = errors.New("model structure too large for its file size")

func (p *parser) spend(n int64) error {
	p.budget -= n
	if p.budget < 0 {
		return errBudget
	}
	return nil
}

// appendVarints appends one varint field or a packed run of them.
func appendVarints(dst *[]int64, f field, conv func(uint64) int64) error {
	switch f.typ {
	case protowire.VarintType:
		*dst = append(*dst, conv(f.v))
		return nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("packed field %d: %w", f.num, protowire.ParseError(n))
			}
			*dst = append(*dst, conv(v))
			b = b[n:]
		}
		return nil
	}
	return fmt.Errorf("field %d: unexpected wire type %d", f.num, f.typ)
}

// appendFloat32s appends one fixed32 float or a packed run of them.
func appendFloat32s(dst *[]float32, f field) error {
	switch f.typ {
	case protowire.Fixed32Type:
		*dst = append(*dst, math.Float32frombits(uint32(f.v)))
		return nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return fmt.Errorf("packed floats: %d bytes is not a multiple of 4", len(f.b))
		}
		for i := 0; i < len(f.b); i += 4 {
			*dst = append(*dst, math.Float32frombits(binary.LittleEndian.Uint32(f.b[i:])))
		}
		return nil
	}
	return fmt.Errorf("field %d: unexpected wire type %d", f.num, f.typ)
}

// appendFloat64s appends one fixed64 double or a packed run of them.
func appendFloat64s(dst *[]float64, f field) error {
	switch f.typ {
	case protowire.Fixed64Type:
		*dst = append(*dst, math.Float64frombits(f.v))
		return nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return fmt.Errorf("packed doubles: %d bytes is not a multiple of 8", len(f.b))
		}
		for i := 0; i < len(f.b); i += 8 {
			*dst = append(*dst, math.Float64frombits(binary.LittleEndian.Uint64(f.b[i:])))
		}
		return nil
	}
	return fmt.Errorf("field %d: unexpected wire type %d", f.num, f.typ)
}
