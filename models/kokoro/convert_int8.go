package kokoro

import (
	"context"
	"fmt"
	"github.com/tensorforge/forge/weights"
	"regexp"
	"strings"

	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// convertInt8 names onnx-community's int8 Kokoro export (dynamic
// quantization, then onnxruntime graph optimisation) with the same names as
// the fp32 model, so one set of model code serves both:
//
//   - MatMulInteger weights (Linear layers, stored [in,out] int8 with one
//     scale and zero point per output column) become X.weight I8 [out,in]
//     with X.weight_scale F32 [out] and X.weight_zero_point I8 [out]: per
//     output channel, along axis 0. Zero points are shared between weights in
//     the file; each weight gets its own copy;
//   - ConvInteger weights (the weight-normalised convolutions, folded and
//     quantized per tensor) become X.weight U8 [out,in,k] with scalar
//     X.weight_scale and X.weight_zero_point;
//   - DynamicQuantizeLSTM weights (W [D,I,4H], R [D,H,4H] int8, one scale
//     and zero point per direction) become weight_ih_l0 / weight_hh_l0
//     (and _reverse) I8 [4H,I] / [4H,H] in PyTorch gate order i,f,g,o, each
//     with a scalar _scale and _zero_point; biases stay F32;
//   - the quantized embedding tables (read through Gather + DequantizeLinear)
//     become X.weight I8 [rows,dim] with scalar scale and zero point;
//   - everything left in float32 is named as in the fp32 model.
func convertInt8(ctx context.Context, src func(string) string) (*weights.Conversion, error) {
	c := weights.NewConversion()
	m, err := c.OpenONNX(src("model_quantized.onnx"))
	if err != nil {
		return nil, err
	}
	if err := kokoroInt8Graph(ctx, c, m.Graph); err != nil {
		c.Close()
		return nil, err
	}
	c.Note("Linear weights: I8 [out,in], per-output-channel scale/zero point [out]; convolutions: U8, per-tensor; LSTMs: I8 per direction")
	c.Note("names match kokoro-v1.0 (fp32); weight-normalised conv weights are the folded effective weight")
	return c, nil
}

// callSuffix matches the de-duplication suffix the exporter gives the
// second and later calls of a shared module ("query_3").
var callSuffix = regexp.MustCompile(`_\d+$`)

// moduleScope is onnx.Scope() with call suffixes dropped from every component:
// ALBERT runs its one shared layer 12 times, as attention/query,
// attention/query_1, ...
func moduleScope(nodeName string) string {
	parts := strings.Split(onnx.Scope(nodeName), ".")
	for i, p := range parts {
		parts[i] = callSuffix.ReplaceAllString(p, "")
	}
	return strings.Join(parts, ".")
}

func kokoroInt8Graph(ctx context.Context, c *weights.Conversion, g *onnx.Graph) error {
	ix := onnx.NewIndex(g)
	nodes := g.AllNodes()
	claimed := map[string]bool{}
	named := map[string]string{} // weight (ONNX name) → PyTorch name, to catch clashes
	setName := func(onnxName, pt string) error {
		if prev, ok := named[onnxName]; ok && prev != pt {
			return fmt.Errorf("%s: named both %s and %s", onnxName, prev, pt)
		}
		named[onnxName] = pt
		return nil
	}
	type qw struct {
		node  *onnx.Node
		w, zp string
	}
	var order []string
	weights := map[string]qw{}
	for _, n := range nodes {
		switch n.OpType {
		case "MatMulInteger", "ConvInteger":
			if len(n.Inputs) < 2 {
				return fmt.Errorf("%s: %s without a weight", n.Name, n.OpType)
			}
			w := n.Inputs[1]
			if ix.Consts[w] == nil {
				return fmt.Errorf("%s: weight %s is not a constant", n.Name, w)
			}
			zp := ""
			if len(n.Inputs) > 3 {
				zp = n.Inputs[3]
			}
			var pt string
			if base, ok := strings.CutSuffix(w, "_quantized"); ok && !onnx.Anonymous(base) {
				p, err := kokoroName(base)
				if err != nil {
					return err
				}
				pt = p
			} else if n.OpType == "ConvInteger" {
				pt = convBiasName(ix, n)
			}
			if pt == "" {
				p, err := kokoroName(moduleScope(n.Name))
				if err != nil {
					return fmt.Errorf("%s: %w", n.Name, err)
				}
				pt = p + ".weight"
			}
			if err := setName(w, pt); err != nil {
				return err
			}
			if prev, ok := weights[w]; ok {
				if prev.zp != zp || prev.node.OpType != n.OpType {
					return fmt.Errorf("%s: reused with a different zero point", w)
				}
				continue
			}
			weights[w] = qw{n, w, zp}
			order = append(order, w)
		case "DynamicQuantizeLSTM":
			if err := kokoroQLSTM(c, ix, n, claimed); err != nil {
				return err
			}
		case "DequantizeLinear":
			// Quantized embedding tables: Gather on the int8 table, then
			// DequantizeLinear with the table's scale and zero point.
			g := ix.Producer[n.Inputs[0]]
			if g == nil || g.OpType != "Gather" || len(n.Inputs) < 3 {
				return fmt.Errorf("%s: DequantizeLinear not fed by a Gather", n.Name)
			}
			table := g.Inputs[0]
			base, ok := strings.CutSuffix(table, "_quantized")
			if !ok || onnx.Anonymous(base) {
				return fmt.Errorf("%s: unnamed quantized table %s", n.Name, table)
			}
			pt, err := kokoroName(base)
			if err != nil {
				return err
			}
			q, scale, zp := ix.Consts[table], ix.Consts[n.Inputs[1]], ix.Consts[n.Inputs[2]]
			if q == nil || scale == nil || zp == nil {
				return fmt.Errorf("%s: table, scale and zero point must be constants", n.Name)
			}
			if err := c.AddQuantized(pt, q, scale, zp, false); err != nil {
				return err
			}
			claimed[table], claimed[n.Inputs[1]], claimed[n.Inputs[2]] = true, true, true
		}
	}
	for _, w := range order {
		q := weights[w]
		base := strings.TrimSuffix(w, "_quantized")
		scale := ix.Consts[base+"_scale"]
		if scale == nil {
			return fmt.Errorf("%s: no %s_scale", w, base)
		}
		zp := ix.Consts[q.zp]
		if zp == nil {
			return fmt.Errorf("%s: zero point %q is not a constant", w, q.zp)
		}
		if err := c.AddQuantized(named[w], ix.Consts[w], scale, zp, q.node.OpType == "MatMulInteger"); err != nil {
			return err
		}
		claimed[w], claimed[base+"_scale"], claimed[q.zp] = true, true, true
	}
	return kokoroGraph(ctx, c, ix, nodes, claimed)
}

// convBiasName finds the named bias the int8 export adds after a
// ConvInteger (ConvInteger → Add(·, Reshape(Cast(Floor(Div(x.bias, ·)))))
// and returns "x.weight" in KModel naming, or "" if there is none.
func convBiasName(ix *onnx.Index, n *onnx.Node) string {
	for _, u := range ix.Consumers[n.Outputs[0]] {
		if u.Node.OpType != "Add" {
			continue
		}
		for _, in := range u.Node.Inputs {
			if in == n.Outputs[0] {
				continue
			}
			if b := namedBiasUpstream(ix, in, 6); b != "" {
				if pt, err := kokoroName(strings.TrimSuffix(b, ".bias") + ".weight"); err == nil {
					return pt
				}
			}
		}
	}
	return ""
}

// namedBiasUpstream follows the bias-quantization chain back from value
// (through the data input of Reshape, Cast, Floor, Round and Div, at most
// depth steps) to a named ".bias" constant.
func namedBiasUpstream(ix *onnx.Index, value string, depth int) string {
	for ; depth >= 0; depth-- {
		if ix.Consts[value] != nil && !onnx.Anonymous(value) && strings.HasSuffix(value, ".bias") {
			return value
		}
		p := ix.Producer[value]
		if p == nil || len(p.Inputs) == 0 {
			return ""
		}
		switch p.OpType {
		case "Reshape", "Cast", "Floor", "Round", "Div":
			value = p.Inputs[0]
		default:
			return ""
		}
	}
	return ""
}

// kokoroQLSTM converts a com.microsoft DynamicQuantizeLSTM: inputs X, W, R,
// B, sequence_lens, initial_h, initial_c, P, W_scale, W_zero_point,
// R_scale, R_zero_point; W [D,I,4H] and R [D,H,4H] int8 with gates i,o,f,c
// along the last axis.
func kokoroQLSTM(c *weights.Conversion, ix *onnx.Index, n *onnx.Node, claimed map[string]bool) error {
	if len(n.Inputs) < 12 || (n.Inputs[7] != "") {
		return fmt.Errorf("%s: want 12 inputs and no peepholes", n.Name)
	}
	if n.AttrInt("input_forget", 0) != 0 {
		return fmt.Errorf("%s: input_forget is not supported", n.Name)
	}
	if _, ok := n.Attr("activations"); ok {
		return fmt.Errorf("%s: non-default activations", n.Name)
	}
	base, err := kokoroName(onnx.Scope(n.Name))
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	get := func(i int) (*onnx.Tensor, error) {
		t := ix.Consts[n.Inputs[i]]
		if t == nil {
			return nil, fmt.Errorf("%s: input %d (%s) is not a constant", n.Name, i, n.Inputs[i])
		}
		return t, nil
	}
	var ts [12]*onnx.Tensor
	for _, i := range []int{1, 2, 3, 8, 9, 10, 11} {
		t, err := get(i)
		if err != nil {
			return err
		}
		ts[i] = t
	}
	W, R, B := ts[1], ts[2], ts[3]
	if W.DataType != onnx.Int8 || R.DataType != onnx.Int8 || B.DataType != onnx.Float ||
		len(W.Dims) != 3 || len(R.Dims) != 3 || len(B.Dims) != 2 {
		return fmt.Errorf("%s: W %s%v R %s%v B %s%v", n.Name, W.DataType, W.Dims, R.DataType, R.Dims, B.DataType, B.Dims)
	}
	D, I, H4, H := int(W.Dims[0]), int(W.Dims[1]), int(W.Dims[2]), int(R.Dims[1])
	if H4 != 4*H || int(R.Dims[0]) != D || int(R.Dims[2]) != H4 || int(B.Dims[0]) != D || int(B.Dims[1]) != 2*H4 {
		return fmt.Errorf("%s: inconsistent W%v R%v B%v", n.Name, W.Dims, R.Dims, B.Dims)
	}
	for _, i := range []int{8, 9, 10, 11} {
		if ts[i].NumElements() != int64(D) {
			return fmt.Errorf("%s: input %d has %d elements, want one per direction (%d)", n.Name, i, ts[i].NumElements(), D)
		}
	}
	dir := n.AttrString("direction", "forward")
	if (dir == "bidirectional") != (D == 2) {
		return fmt.Errorf("%s: direction %q with %d directions", n.Name, dir, D)
	}
	for _, i := range []int{1, 2, 3, 8, 9, 10, 11} {
		claimed[n.Inputs[i]] = true
	}
	for d := 0; d < D; d++ {
		suffix := "_l0"
		if d == 1 || dir == "reverse" {
			suffix = "_l0_reverse"
		}
		// [I,4H] → [4H,I], then gate blocks of H rows from iofc to ifgo.
		w := reorderGates(weights.Transpose2D(W.Raw[d*I*H4:(d+1)*I*H4], I, H4, 1), H, I, 1)
		r := reorderGates(weights.Transpose2D(R.Raw[d*H*H4:(d+1)*H*H4], H, H4, 1), H, H, 1)
		b := B.Raw[d*2*H4*4 : (d+1)*2*H4*4]
		add := func(name, src string, dt safetensors.DType, shape []int, data []byte) error {
			c.From(src, base+"."+name+suffix)
			return c.Add(base+"."+name+suffix, dt, shape, data)
		}
		if err := add("weight_ih", n.Inputs[1], safetensors.I8, []int{H4, I}, w); err != nil {
			return err
		}
		if err := add("weight_hh", n.Inputs[2], safetensors.I8, []int{H4, H}, r); err != nil {
			return err
		}
		if err := add("bias_ih", n.Inputs[3], safetensors.F32, []int{H4}, reorderGates(b[:H4*4], H, 1, 4)); err != nil {
			return err
		}
		if err := add("bias_hh", n.Inputs[3], safetensors.F32, []int{H4}, reorderGates(b[H4*4:], H, 1, 4)); err != nil {
			return err
		}
		for _, q := range []struct {
			name   string
			scale  *onnx.Tensor
			zp     *onnx.Tensor
			wantZP onnx.DataType
		}{{"weight_ih", ts[8], ts[9], onnx.Int8}, {"weight_hh", ts[10], ts[11], onnx.Int8}} {
			if q.scale.DataType != onnx.Float || q.zp.DataType != q.wantZP {
				return fmt.Errorf("%s: scale %s / zero point %s", n.Name, q.scale.DataType, q.zp.DataType)
			}
			name := base + "." + q.name + suffix
			c.From(q.scale.Name, name+"_scale")
			c.From(q.zp.Name, name+"_zero_point")
			if err := c.Add(name+"_scale", safetensors.F32, []int{}, q.scale.Raw[4*d:4*d+4]); err != nil {
				return err
			}
			if err := c.Add(name+"_zero_point", safetensors.I8, []int{}, q.zp.Raw[d:d+1]); err != nil {
				return err
			}
		}
	}
	return nil
}
