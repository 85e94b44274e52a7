package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tensorforge/forge/weights/onnx"
)

// printGraph writes a readable listing of g and its subgraphs: declared
// inputs/outputs, initializers (name, dtype, shape) and every node with its
// op, inputs, outputs and attributes, in file order.
func printGraph(w io.Writer, g *onnx.Graph, indent string) {
	fmt.Fprintf(w, "%sgraph %q: %d nodes, %d initializers\n", indent, g.Name, len(g.Nodes), len(g.Initializers))
	for _, v := range g.Inputs {
		fmt.Fprintf(w, "%s  input  %s %s%s\n", indent, v.Name, v.ElemType, dims(v.Shape))
	}
	for _, v := range g.Outputs {
		fmt.Fprintf(w, "%s  output %s %s%s\n", indent, v.Name, v.ElemType, dims(v.Shape))
	}
	for _, t := range g.Initializers {
		fmt.Fprintf(w, "%s  init   %s %s%v\n", indent, t.Name, t.DataType, t.Dims)
	}
	for _, n := range g.Nodes {
		fmt.Fprintf(w, "%s  %s %s(%s) -> (%s)", indent, n.Name, n.OpType, strings.Join(n.Inputs, ", "), strings.Join(n.Outputs, ", "))
		var sub []*onnx.Attribute
		for i := range n.Attrs {
			a := &n.Attrs[i]
			if a.G != nil || len(a.Graphs) > 0 {
				sub = append(sub, a)
				continue
			}
			fmt.Fprintf(w, " %s=%s", a.Name, attrValue(a))
		}
		fmt.Fprintln(w)
		for _, a := range sub {
			fmt.Fprintf(w, "%s    %s:\n", indent, a.Name)
			if a.G != nil {
				printGraph(w, a.G, indent+"      ")
			}
			for _, g := range a.Graphs {
				printGraph(w, g, indent+"      ")
			}
		}
	}
}

func dims(d []onnx.Dim) string {
	if d == nil {
		return "[?]"
	}
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = x.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

func attrValue(a *onnx.Attribute) string {
	switch a.Type {
	case onnx.AttrFloat:
		return fmt.Sprint(a.F)
	case onnx.AttrInt:
		return fmt.Sprint(a.I)
	case onnx.AttrString:
		return fmt.Sprintf("%q", a.S)
	case onnx.AttrTensor:
		return tensorValue(a.T)
	case onnx.AttrFloats:
		return fmt.Sprint(a.Floats)
	case onnx.AttrInts:
		return fmt.Sprint(a.Ints)
	case onnx.AttrStrings:
		s := make([]string, len(a.Strings))
		for i, x := range a.Strings {
			s[i] = fmt.Sprintf("%q", x)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("<type %d>", a.Type)
}

// tensorValue prints small tensors in full (shape constants, axes, scales) and
// large ones as dtype and shape.
func tensorValue(t *onnx.Tensor) string {
	head := fmt.Sprintf("%s%v", t.DataType, t.Dims)
	if t.NumElements() > 16 {
		return head
	}
	switch t.DataType {
	case onnx.Float:
		v, _ := t.Float32s()
		return fmt.Sprintf("%s%v", head, v)
	case onnx.Int64:
		v, _ := t.Int64s()
		return fmt.Sprintf("%s%v", head, v)
	case onnx.Int32:
		v, _ := t.Int32s()
		return fmt.Sprintf("%s%v", head, v)
	case onnx.Uint8:
		return fmt.Sprintf("%s%v", head, t.Raw)
	case onnx.Int8:
		v, _ := t.Int8s()
		return fmt.Sprintf("%s%v", head, v)
	}
	return head
}
