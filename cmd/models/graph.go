package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tensorforge/forge/weights/onnx"
)

// printGraph writes a readable listing of g and its subgraphs: declared
// inputs/outputs, initializers (name, dtype, shape) and every node with its
// op, inputs, outputs and attributes, in file order. Values that were
// converted to named tensors are followed by {=name}, from the manifest's
// ONNX name map.
func printGraph(w io.Writer, g *onnx.Graph, indent string, names map[string][]string) {
	ann := func(v string) string {
		if ns, ok := names[v]; ok {
			return v + "{=" + strings.Join(ns, "|") + "}"
		}
		return v
	}
	fmt.Fprintf(w, "%sgraph %q: %d nodes, %d initializers\n", indent, g.Name, len(g.Nodes), len(g.Initializers))
	for _, v := range g.Inputs {
		fmt.Fprintf(w, "%s  input  %s %s%s\n", indent, v.Name, v.ElemType, dims(v.Shape))
	}
	for _, v := range g.Outputs {
		fmt.Fprintf(w, "%s  output %s %s%s\n", indent, v.Name, v.ElemType, dims(v.Shape))
	}
	for _, t := range g.Initializers {
		fmt.Fprintf(w, "%s  init   %s %s\n", indent, ann(t.Name), tensorValue(t))
	}
	for _, n := range g.Nodes {
		ins := make([]string, len(n.Inputs))
		for i, in := range n.Inputs {
			ins[i] = ann(in)
		}
		outs := make([]string, len(n.Outputs))
		for i, out := range n.Outputs {
			outs[i] = ann(out)
		}
		op := n.OpType
		if n.Domain != "" {
			op = n.Domain + "." + op
		}
		fmt.Fprintf(w, "%s  %s %s(%s) -> (%s)", indent, n.Name, op, strings.Join(ins, ", "), strings.Join(outs, ", "))
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
				printGraph(w, a.G, indent+"      ", names)
			}
			for _, g := range a.Graphs {
				printGraph(w, g, indent+"      ", names)
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

// constants returns every constant tensor of g and its subgraphs:
// initializers and the values of Constant nodes, by value name.
func constants(g *onnx.Graph) map[string]*onnx.Tensor {
	out := map[string]*onnx.Tensor{}
	g.Walk(func(_ string, g *onnx.Graph) {
		for _, t := range g.Initializers {
			out[t.Name] = t
		}
		for _, n := range g.Nodes {
			if a, ok := n.Attr("value"); ok && n.OpType == "Constant" && a.T != nil && len(n.Outputs) == 1 {
				out[n.Outputs[0]] = a.T
			}
		}
	})
	return out
}

// printValues writes every element of t, eight to a line.
func printValues(w io.Writer, t *onnx.Tensor) error {
	var vals []string
	switch t.DataType {
	case onnx.Float:
		v, _ := t.Float32s()
		for _, x := range v {
			vals = append(vals, fmt.Sprint(x))
		}
	case onnx.Int64:
		v, _ := t.Int64s()
		for _, x := range v {
			vals = append(vals, fmt.Sprint(x))
		}
	case onnx.Int32:
		v, _ := t.Int32s()
		for _, x := range v {
			vals = append(vals, fmt.Sprint(x))
		}
	case onnx.Int8:
		v, _ := t.Int8s()
		for _, x := range v {
			vals = append(vals, fmt.Sprint(x))
		}
	case onnx.Uint8, onnx.Bool:
		for _, x := range t.Raw {
			vals = append(vals, fmt.Sprint(x))
		}
	default:
		return fmt.Errorf("cannot print %s values", t.DataType)
	}
	fmt.Fprintf(w, "# %s %s%v\n", t.Name, t.DataType, t.Dims)
	for i := 0; i < len(vals); i += 8 {
		fmt.Fprintln(w, strings.Join(vals[i:min(i+8, len(vals))], " "))
	}
	return nil
}
