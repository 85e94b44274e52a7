package onnx

import (
	"fmt"
	"sort"
	"strings"
)

// Use is one consumption of a value: Node reads it as input Input.
type Use struct {
	Node  *Node
	Input int
}

// Index indexes a graph and all its nested subgraphs for naming weights:
// every constant tensor (initializers and Constant nodes' values) by value
// name, who consumes each value, and who produces it. Model converters use
// it to name an anonymous weight after the node that reads it.
type Index struct {
	Consts    map[string]*Tensor
	Order     []string // constant names in file order
	Consumers map[string][]Use
	Producer  map[string]*Node
}

// NewIndex indexes g.
func NewIndex(g *Graph) *Index {
	ix := &Index{Consts: map[string]*Tensor{}, Consumers: map[string][]Use{}, Producer: map[string]*Node{}}
	g.Walk(func(_ string, g *Graph) {
		for _, t := range g.Initializers {
			if _, dup := ix.Consts[t.Name]; !dup {
				ix.Order = append(ix.Order, t.Name)
			}
			ix.Consts[t.Name] = t
		}
		for _, n := range g.Nodes {
			for i, in := range n.Inputs {
				if in != "" {
					ix.Consumers[in] = append(ix.Consumers[in], Use{n, i})
				}
			}
			for _, out := range n.Outputs {
				ix.Producer[out] = n
			}
			if n.OpType == "Constant" && len(n.Outputs) == 1 {
				if a, ok := n.Attr("value"); ok && a.T != nil {
					if _, dup := ix.Consts[n.Outputs[0]]; !dup {
						ix.Order = append(ix.Order, n.Outputs[0])
					}
					ix.Consts[n.Outputs[0]] = a.T
				}
			}
		}
	})
	return ix
}

// UsesBy returns the uses of value by nodes of the given op types.
func (ix *Index) UsesBy(value string, ops ...string) []Use {
	var out []Use
	for _, u := range ix.Consumers[value] {
		for _, op := range ops {
			if u.Node.OpType == op {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// Unused lists the float constants of at least minElems elements that no
// rule claimed, as "name type[dims]", sorted: a converter's rule that
// misses a real weight shows up here.
func (ix *Index) Unused(claimed map[string]bool, minElems int64) []string {
	var out []string
	for _, name := range ix.Order {
		t := ix.Consts[name]
		if claimed[name] || t.DataType != Float || t.NumElements() < minElems {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s%v", name, t.DataType, t.Dims))
	}
	sort.Strings(out)
	return out
}

// AllNodes lists the nodes of g and of all its subgraphs.
func (g *Graph) AllNodes() []*Node {
	var out []*Node
	g.Walk(func(_ string, g *Graph) { out = append(out, g.Nodes...) })
	return out
}

// Scope turns a node name such as
// "/model/decoder/layers.0/self_attn/q_proj/MatMul_quant" into its module
// path "model.decoder.layers.0.self_attn.q_proj": the components between
// the leading "/" and the op name, as torch.onnx names nodes. The
// exporter's de-duplication suffixes on module names ("query_1" for the
// second call of a shared module) are kept; callers that want them gone
// say so.
func Scope(nodeName string) string {
	i := strings.Index(nodeName, "/")
	j := strings.LastIndex(nodeName, "/")
	if i < 0 || j <= i {
		return ""
	}
	return strings.ReplaceAll(nodeName[i+1:j], "/", ".")
}

// Anonymous reports whether a value name was made up by the exporter
// ("onnx::MatMul_6547", "/decoder/Mul_output_0") rather than taken from a
// module's parameter.
func Anonymous(name string) bool {
	return strings.HasPrefix(name, "onnx::") || strings.HasPrefix(name, "/")
}
