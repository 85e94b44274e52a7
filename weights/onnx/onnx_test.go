package onnx

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// msg builds protobuf messages for tests.
type msg []byte

func (m msg) bytes(num protowire.Number, b []byte) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendBytes(m, b)
}
func (m msg) str(num protowire.Number, s string) msg { return m.bytes(num, []byte(s)) }
func (m msg) varint(num protowire.Number, v uint64) msg {
	m = protowire.AppendTag(m, num, protowire.VarintType)
	return protowire.AppendVarint(m, v)
}
func (m msg) fixed32(num protowire.Number, v uint32) msg {
	m = protowire.AppendTag(m, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(m, v)
}

func packedVarints(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = protowire.AppendVarint(b, uint64(v))
	}
	return b
}

func f32le(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// tensorMsg encodes a TensorProto with raw data.
func tensorMsg(name string, dt DataType, dims []int64, raw []byte) msg {
	var m msg
	m = m.bytes(1, packedVarints(dims...))
	m = m.varint(2, uint64(dt))
	m = m.str(8, name)
	return m.bytes(9, raw)
}

func valueInfo(name string, elem DataType, dims ...any) msg {
	var shape msg
	for _, d := range dims {
		var dim msg
		switch d := d.(type) {
		case int:
			dim = dim.varint(1, uint64(d))
		case string:
			dim = dim.str(2, d)
		}
		shape = shape.bytes(1, dim)
	}
	tensorType := msg(nil).varint(1, uint64(elem)).bytes(2, shape)
	typ := msg(nil).bytes(1, tensorType)
	return msg(nil).str(1, name).bytes(2, typ)
}

func node(name, op string, in, out []string, attrs ...msg) msg {
	var m msg
	for _, s := range in {
		m = m.str(1, s)
	}
	for _, s := range out {
		m = m.str(2, s)
	}
	m = m.str(3, name).str(4, op)
	for _, a := range attrs {
		m = m.bytes(5, a)
	}
	return m
}

// testModel builds a small model exercising every part of the reader: raw
// and typed tensor data (packed and unpacked), all attribute kinds, an If
// with two subgraphs, declared inputs and outputs with symbolic dims.
func testModel() []byte {
	// Typed tensors: float_data packed, int64_data unpacked, int32_data for
	// uint8 and int8.
	floats := msg(nil).bytes(1, packedVarints(2)).varint(2, uint64(Float)).str(8, "typed_f").bytes(4, f32le(1.5, -2))
	ints := msg(nil).bytes(1, packedVarints(3)).varint(2, uint64(Int64)).str(8, "typed_i").varint(7, 7).varint(7, math.MaxUint64).varint(7, 1<<40)
	u8 := msg(nil).bytes(1, packedVarints(2)).varint(2, uint64(Uint8)).str(8, "typed_u8").bytes(5, packedVarints(200, 3))
	i8 := msg(nil).bytes(1, packedVarints(2)).varint(2, uint64(Int8)).str(8, "typed_i8").bytes(5, packedVarints(-5, 7))
	scalar := msg(nil).varint(2, uint64(Float)).str(8, "scalar").bytes(9, f32le(0.25))

	thenG := msg(nil).str(2, "then").bytes(1, node("t", "Identity", []string{"x"}, []string{"y"})).bytes(12, valueInfo("y", Float, "N"))
	elseG := msg(nil).str(2, "else").bytes(1, node("e", "Neg", []string{"x"}, []string{"y"})).bytes(5, tensorMsg("inner_w", Float, []int64{1}, f32le(9)))
	ifNode := node("/If", "If", []string{"cond"}, []string{"y"},
		msg(nil).str(1, "then_branch").varint(20, uint64(AttrGraph)).bytes(6, thenG),
		msg(nil).str(1, "else_branch").varint(20, uint64(AttrGraph)).bytes(6, elseG))
	conv := node("/layers.0/conv/Conv", "Conv", []string{"x", "w", ""}, []string{"c"},
		msg(nil).str(1, "kernel_shape").varint(20, uint64(AttrInts)).bytes(8, packedVarints(3)),
		msg(nil).str(1, "pads").varint(20, uint64(AttrInts)).varint(8, 1).varint(8, 1),
		msg(nil).str(1, "alpha").varint(20, uint64(AttrFloat)).fixed32(2, math.Float32bits(0.5)),
		msg(nil).str(1, "group").varint(20, uint64(AttrInt)).varint(3, 2),
		msg(nil).str(1, "mode").varint(20, uint64(AttrString)).str(4, "reflect"),
		msg(nil).str(1, "scales").varint(20, uint64(AttrFloats)).bytes(7, f32le(1, 2)),
		msg(nil).str(1, "names").varint(20, uint64(AttrStrings)).str(9, "a").str(9, "b"))
	constant := node("/Constant", "Constant", nil, []string{"k"},
		msg(nil).str(1, "value").varint(20, uint64(AttrTensor)).bytes(5, tensorMsg("", Int64, []int64{2}, packedI64(4, -1))))

	var g msg
	g = g.bytes(1, constant).bytes(1, conv).bytes(1, ifNode).str(2, "main")
	g = g.bytes(5, tensorMsg("w", Float, []int64{2, 1, 3}, f32le(1, 2, 3, 4, 5, 6)))
	g = g.bytes(5, floats).bytes(5, ints).bytes(5, u8).bytes(5, i8).bytes(5, scalar)
	g = g.bytes(11, valueInfo("x", Float, "batch", 1, 16)).bytes(11, valueInfo("cond", Bool))
	g = g.bytes(12, valueInfo("y", Float, "batch", 2, 16))

	var m msg
	m = m.varint(1, 8).str(2, "test").str(3, "1.0")
	m = m.bytes(8, msg(nil).str(1, "").varint(2, 17))
	m = m.bytes(8, msg(nil).str(1, "com.microsoft").varint(2, 1))
	m = m.bytes(7, g)
	m = m.bytes(14, msg(nil).str(1, "k").str(2, "v"))
	return m
}

func packedI64(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func TestParse(t *testing.T) {
	m, err := Parse(testModel())
	if err != nil {
		t.Fatal(err)
	}
	if m.IRVersion != 8 || m.ProducerName != "test" || m.ProducerVersion != "1.0" || m.Metadata["k"] != "v" {
		t.Errorf("model header: %+v", m)
	}
	if len(m.Opsets) != 2 || m.Opsets[0].Version != 17 || m.Opsets[1].Domain != "com.microsoft" {
		t.Errorf("opsets %+v", m.Opsets)
	}
	g := m.Graph
	if g.Name != "main" || len(g.Nodes) != 3 || len(g.Initializers) != 6 {
		t.Fatalf("graph %q: %d nodes, %d initializers", g.Name, len(g.Nodes), len(g.Initializers))
	}
	if len(g.Inputs) != 2 || g.Inputs[0].Name != "x" || g.Inputs[0].ElemType != Float ||
		len(g.Inputs[0].Shape) != 3 || g.Inputs[0].Shape[0].Param != "batch" || g.Inputs[0].Shape[2].Value != 16 {
		t.Errorf("inputs %+v", g.Inputs)
	}
	if g.Inputs[1].Shape == nil || len(g.Inputs[1].Shape) != 0 {
		t.Errorf("scalar input: shape %+v, want empty and declared", g.Inputs[1].Shape)
	}
	w, ok := g.Initializer("w")
	if !ok {
		t.Fatal("no initializer w")
	}
	if v, _ := w.Float32s(); len(v) != 6 || v[5] != 6 || w.NumElements() != 6 {
		t.Errorf("w = %v", v)
	}
	tests := []struct {
		name string
		want any
	}{
		{"typed_f", []float32{1.5, -2}},
		{"typed_i", []int64{7, -1, 1 << 40}},
		{"typed_u8", []uint8{200, 3}},
		{"typed_i8", []int8{-5, 7}},
		{"scalar", []float32{0.25}},
	}
	for _, tt := range tests {
		tn, ok := g.Initializer(tt.name)
		if !ok {
			t.Fatalf("no initializer %s", tt.name)
		}
		var got any
		switch tt.want.(type) {
		case []float32:
			got, _ = tn.Float32s()
		case []int64:
			got, _ = tn.Int64s()
		case []uint8:
			got, _ = tn.Uint8s()
		case []int8:
			got, _ = tn.Int8s()
		}
		if !equalAny(got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	if _, err := w.Int64s(); err == nil {
		t.Error("Int64s of a float tensor succeeded")
	}
	conv := g.Nodes[1]
	if conv.OpType != "Conv" || len(conv.Inputs) != 3 || conv.Inputs[2] != "" {
		t.Errorf("conv %+v", conv)
	}
	if a, _ := conv.Attr("pads"); a == nil || len(a.Ints) != 2 {
		t.Errorf("unpacked ints attribute: %+v", a)
	}
	if a, _ := conv.Attr("kernel_shape"); a == nil || a.Ints[0] != 3 {
		t.Errorf("packed ints attribute: %+v", a)
	}
	if a, _ := conv.Attr("alpha"); a.F != 0.5 {
		t.Errorf("float attribute %v", a.F)
	}
	if conv.AttrInt("group", 1) != 2 || conv.AttrString("mode", "") != "reflect" || conv.AttrInt("absent", 7) != 7 {
		t.Error("AttrInt/AttrString")
	}
	if a, _ := conv.Attr("scales"); len(a.Floats) != 2 || a.Floats[1] != 2 {
		t.Errorf("floats attribute %+v", a.Floats)
	}
	if a, _ := conv.Attr("names"); len(a.Strings) != 2 || string(a.Strings[1]) != "b" {
		t.Errorf("strings attribute %q", a.Strings)
	}
	c, _ := g.Nodes[0].Attr("value")
	if v, _ := c.T.Int64s(); len(v) != 2 || v[1] != -1 {
		t.Errorf("Constant value %v", v)
	}
	subs := g.Subgraphs()
	if len(subs) != 2 || subs[0].Name != "then" || subs[1].Name != "else" {
		t.Fatalf("subgraphs %d", len(subs))
	}
	if _, ok := subs[1].Initializer("inner_w"); !ok {
		t.Error("subgraph initializer missing")
	}
	var paths []string
	g.Walk(func(path string, g *Graph) { paths = append(paths, path+g.Name) })
	if strings.Join(paths, ",") != "main,/If:then_branch/then,/If:else_branch/else" {
		t.Errorf("Walk visited %v", paths)
	}
}

func equalAny(a, b any) bool {
	switch a := a.(type) {
	case []float32:
		b := b.([]float32)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	case []int64:
		b := b.([]int64)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	case []uint8:
		return string(a) == string(b.([]uint8))
	case []int8:
		b := b.([]int8)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	return false
}

func TestParseErrors(t *testing.T) {
	good := testModel()
	graph := func(inits ...msg) []byte {
		var g msg
		for _, i := range inits {
			g = g.bytes(5, i)
		}
		return msg(nil).bytes(7, g)
	}
	deep := msg(nil)
	for i := 0; i < 40; i++ {
		n := node("if", "If", nil, nil, msg(nil).str(1, "g").bytes(6, deep))
		deep = msg(nil).bytes(1, n)
	}
	var many msg
	for i := 0; i < 100000; i++ {
		many = many.bytes(1, nil) // 100k empty nodes: 2 bytes each in the file
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no graph"},
		{"allocation bomb", msg(nil).bytes(7, many), "too large for its file size"},
		{"truncated", good[:len(good)/2], ""},
		{"bad tag", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "bad field tag"},
		{"raw size", graph(tensorMsg("t", Float, []int64{3}, f32le(1, 2))), "raw_data holds 8 bytes"},
		{"negative dim", graph(tensorMsg("t", Float, []int64{-1}, nil)), "negative dimension"},
		{"overflow dims", graph(tensorMsg("t", Float, []int64{1 << 40, 1 << 40}, nil)), "overflows"},
		{"unknown dtype", graph(tensorMsg("t", DataType(99), []int64{1}, []byte{0})), "unsupported data type"},
		{"typed count", graph(msg(nil).bytes(1, packedVarints(3)).varint(2, uint64(Float)).bytes(4, f32le(1))), "typed data holds 1 elements"},
		{"odd packed floats", graph(msg(nil).varint(2, uint64(Float)).bytes(4, []byte{1, 2, 3})), "multiple of 4"},
		{"graph as varint", msg(nil).varint(7, 3), "unexpected wire type"},
		{"deep nesting", msg(nil).bytes(7, deep), "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDataType(t *testing.T) {
	for _, tt := range []struct {
		d    DataType
		s    string
		size int
	}{{Float, "float32", 4}, {Uint8, "uint8", 1}, {Int64, "int64", 8}, {BFloat16, "bfloat16", 2}, {String, "string", 0}, {DataType(99), "datatype(99)", 0}} {
		if tt.d.String() != tt.s || tt.d.Size() != tt.size {
			t.Errorf("%d: %s/%d, want %s/%d", tt.d, tt.d, tt.d.Size(), tt.s, tt.size)
		}
	}
}

// FuzzParse feeds arbitrary bytes to Parse: it must return a model or an
// error, never panic, and never allocate beyond what the input holds.
func FuzzParse(f *testing.F) {
	f.Add(testModel())
	f.Add([]byte{})
	f.Add([]byte(msg(nil).bytes(7, msg(nil).bytes(5, tensorMsg("t", Float, []int64{2}, f32le(1, 2))))))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		m.Graph.Walk(func(_ string, g *Graph) {
			for _, tn := range g.Initializers {
				if size := int64(tn.DataType.Size()); size > 0 && !tn.External && int64(len(tn.Raw)) != tn.NumElements()*size {
					t.Fatalf("tensor %q: %d bytes for %v", tn.Name, len(tn.Raw), tn.Dims)
				}
			}
		})
	})
}
