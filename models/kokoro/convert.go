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

// kokoroRoots are the top-level modules of Kokoro's KModel (hexgrad/kokoro
// model.py); every converted name starts with one of them.
var kokoroRoots = map[string]bool{"bert": true, "bert_encoder": true, "predictor": true, "text_encoder": true, "decoder": true}

// kokoroName maps an ONNX initializer name or node scope to KModel's
// parameter name. The export wraps KModel in a module whose "encoder" holds
// bert, bert_encoder, predictor and text_encoder and whose "decoder" holds
// KModel.decoder, so "encoder.bert.x" → "bert.x" and
// "decoder.decoder.x" → "decoder.x". Some predictor submodules (F0, N,
// shared, F0_proj, N_proj) were traced outside the predictor's scope, so a
// bare "shared.x" or "F0.1.x" goes back under "predictor.".
func kokoroName(raw string) (string, error) {
	s := raw
	if r, ok := strings.CutPrefix(s, "decoder.decoder."); ok {
		s = "decoder." + r
	} else if r, ok := strings.CutPrefix(s, "encoder."); ok {
		s = r
	}
	first, _, _ := strings.Cut(s, ".")
	if kokoroRoots[first] {
		return s, nil
	}
	switch first {
	case "F0", "N", "shared", "F0_proj", "N_proj":
		return "predictor." + s, nil
	}
	return "", fmt.Errorf("cannot place %q under a KModel module", raw)
}

// convertFP32 names the fp32 Kokoro-82M export as KModel names its
// parameters (see weights/MODELS-NAMES.md for the full rules):
//
//   - named initializers keep their names, minus the export wrapper
//     (kokoroName);
//   - weight-normalised convolution weights, which the exporter folded into
//     constants named after the producing Mul ("/decoder/decoder/encode/Mul_output_0"),
//     are named from the Conv/ConvTranspose that consumes them: after its
//     bias ("decoder.encode.conv1.bias" → "decoder.encode.conv1.weight") or,
//     without a bias, its scope. They hold the effective weight
//     g·v/‖v‖; PyTorch checkpoints store weight_g and weight_v instead;
//   - anonymous MatMul weights (onnx::MatMul_6547) are named after the bias
//     added to the product, or the MatMul's scope, and transposed from
//     [in,out] to PyTorch's [out,in];
//   - LSTM W/R/B become weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0
//     and the same with _reverse for the backward direction, in PyTorch's
//     gate order (i, f, g, o), converted from ONNX's (i, o, f, c).
func convertFP32(ctx context.Context, src func(string) string) (*weights.Conversion, error) {
	c := weights.NewConversion()
	m, err := c.OpenONNX(src("model.onnx"))
	if err != nil {
		return nil, err
	}
	if err := kokoroGraph(ctx, c, onnx.NewIndex(m.Graph), m.Graph.AllNodes(), map[string]bool{}); err != nil {
		c.Close()
		return nil, err
	}
	c.Note("weight-normalised conv weights are the folded effective weight g*v/|v| (PyTorch stores weight_g, weight_v)")
	c.Note("MatMul weights transposed to PyTorch [out,in]; LSTMs in PyTorch layout and gate order i,f,g,o")
	return c, nil
}

// kokoroGraph names the float parameters of a Kokoro graph that the
// caller has not already claimed.
func kokoroGraph(ctx context.Context, c *weights.Conversion, ix *onnx.Index, nodes []*onnx.Node, claimed map[string]bool) error {
	claim := func(onnxName, pt string, t *onnx.Tensor, shape []int, data []byte) error {
		if claimed[onnxName] {
			return fmt.Errorf("%s claimed twice", onnxName)
		}
		claimed[onnxName] = true
		c.From(onnxName, pt)
		dt, err := weights.DType(t.DataType)
		if err != nil {
			return fmt.Errorf("%s: %w", onnxName, err)
		}
		return c.Add(pt, dt, shape, data)
	}
	// 1. LSTMs.
	for _, n := range nodes {
		if n.OpType != "LSTM" {
			continue
		}
		if err := kokoroLSTM(c, ix, n, claimed); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, name := range ix.Order {
		t := ix.Consts[name]
		if claimed[name] || t.DataType != onnx.Float {
			continue
		}
		// 2. Named parameters.
		if !onnx.Anonymous(name) {
			pt, err := kokoroName(name)
			if err != nil {
				return err
			}
			if uses := ix.UsesBy(name, "MatMul"); len(uses) > 0 {
				return fmt.Errorf("%s: named MatMul weight (layout unknown)", name)
			}
			if err := claim(name, pt, t, t.Shape(), t.Raw); err != nil {
				return err
			}
			continue
		}
		// 3. Folded conv weights.
		if convs := ix.UsesBy(name, "Conv", "ConvTranspose"); len(convs) > 0 {
			pt, err := paramName(ix, convs, 1, func(u onnx.Use) (string, bool) {
				if len(u.Node.Inputs) > 2 && !onnx.Anonymous(u.Node.Inputs[2]) && strings.HasSuffix(u.Node.Inputs[2], ".bias") {
					return strings.TrimSuffix(u.Node.Inputs[2], ".bias") + ".weight", true
				}
				return "", false
			})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := claim(name, pt, t, t.Shape(), t.Raw); err != nil {
				return err
			}
			continue
		}
		// 4. Anonymous MatMul weights.
		if mms := ix.UsesBy(name, "MatMul"); len(mms) > 0 && len(t.Dims) == 2 {
			pt, err := paramName(ix, mms, 1, func(u onnx.Use) (string, bool) {
				return biasAfter(ix, u.Node)
			})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			sh := t.Shape()
			if err := claim(name, pt, t, []int{sh[1], sh[0]}, weights.Transpose2D(t.Raw, sh[0], sh[1], 4)); err != nil {
				return err
			}
			continue
		}
	}
	recip := 0
	for _, left := range ix.Unused(claimed, 2) {
		if reciprocal.MatchString(left) {
			recip++
			continue
		}
		c.Note("not a parameter (graph constant, see `models graph`): %s", left)
	}
	if recip > 0 {
		c.Note("left out %d folded Snake constants .../Reciprocal_N_output_0 = 1/alpha (derive them from the alphaK.N parameters)", recip)
	}
	c.Note("bert.pooler.* is not in the ONNX (Kokoro never uses ALBERT's pooler)")
	return nil
}

var reciprocal = regexp.MustCompile(`/Reciprocal(_\d+)?_output_0 `)

// paramName names a weight from its consumers (all of which must read it as
// input idx): from byBias when that finds a named bias, else from the first
// consumer's scope. Every consumer that names it must agree.
func paramName(ix *onnx.Index, uses []onnx.Use, idx int, byBias func(onnx.Use) (string, bool)) (string, error) {
	var name string
	for _, u := range uses {
		if u.Input != idx {
			return "", fmt.Errorf("read by %s as input %d, want %d", u.Node.Name, u.Input, idx)
		}
		if n, ok := byBias(u); ok {
			pt, err := kokoroName(n)
			if err != nil {
				return "", err
			}
			if name != "" && pt != name {
				return "", fmt.Errorf("consumers disagree: %s vs %s", name, pt)
			}
			name = pt
		}
	}
	if name != "" {
		return name, nil
	}
	pt, err := kokoroName(onnx.Scope(uses[0].Node.Name))
	if err != nil {
		return "", err
	}
	return pt + ".weight", nil
}

// biasAfter finds the named bias that is added to the output of MatMul n
// ("x.bias" → "x.weight").
func biasAfter(ix *onnx.Index, n *onnx.Node) (string, bool) {
	for _, u := range ix.Consumers[n.Outputs[0]] {
		if u.Node.OpType != "Add" {
			continue
		}
		for _, in := range u.Node.Inputs {
			if !onnx.Anonymous(in) && strings.HasSuffix(in, ".bias") && ix.Consts[in] != nil {
				return strings.TrimSuffix(in, ".bias") + ".weight", true
			}
		}
	}
	return "", false
}

// onnxToTorchGates maps PyTorch's gate blocks (i, f, g, o) to ONNX's block
// index in (i, o, f, c).
var onnxToTorchGates = [4]int{0, 2, 3, 1}

// kokoroLSTM converts one ONNX LSTM's W [D,4H,I], R [D,4H,H] and B [D,8H]
// into PyTorch nn.LSTM parameters named after the node's scope.
func kokoroLSTM(c *weights.Conversion, ix *onnx.Index, n *onnx.Node, claimed map[string]bool) error {
	if len(n.Inputs) < 4 || (len(n.Inputs) > 7 && n.Inputs[7] != "") {
		return fmt.Errorf("%s: want inputs X, W, R, B and no peepholes", n.Name)
	}
	if n.AttrInt("layout", 0) != 0 || n.AttrInt("input_forget", 0) != 0 {
		return fmt.Errorf("%s: unsupported layout or input_forget", n.Name)
	}
	if _, ok := n.Attr("activations"); ok {
		return fmt.Errorf("%s: non-default activations", n.Name)
	}
	base, err := kokoroName(onnx.Scope(n.Name))
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	W, R, B := ix.Consts[n.Inputs[1]], ix.Consts[n.Inputs[2]], ix.Consts[n.Inputs[3]]
	if W == nil || R == nil || B == nil || W.DataType != onnx.Float || R.DataType != onnx.Float || B.DataType != onnx.Float {
		return fmt.Errorf("%s: W, R, B must be float32 constants", n.Name)
	}
	if len(W.Dims) != 3 || len(R.Dims) != 3 || len(B.Dims) != 2 {
		return fmt.Errorf("%s: W%v R%v B%v", n.Name, W.Dims, R.Dims, B.Dims)
	}
	D, H4, I, H := int(W.Dims[0]), int(W.Dims[1]), int(W.Dims[2]), int(R.Dims[2])
	if H4 != 4*H || R.Dims[0] != W.Dims[0] || int(R.Dims[1]) != H4 || int(B.Dims[0]) != D || int(B.Dims[1]) != 2*H4 {
		return fmt.Errorf("%s: inconsistent W%v R%v B%v", n.Name, W.Dims, R.Dims, B.Dims)
	}
	dir := n.AttrString("direction", "forward")
	if (dir == "bidirectional") != (D == 2) {
		return fmt.Errorf("%s: direction %q with %d directions", n.Name, dir, D)
	}
	if hs := n.AttrInt("hidden_size", int64(H)); int(hs) != H {
		return fmt.Errorf("%s: hidden_size %d, R says %d", n.Name, hs, H)
	}
	for _, name := range n.Inputs[1:4] {
		if claimed[name] {
			return fmt.Errorf("%s: %s shared with another LSTM", n.Name, name)
		}
		claimed[name] = true
	}
	for d := 0; d < D; d++ {
		suffix := "_l0"
		if d == 1 || dir == "reverse" {
			suffix = "_l0_reverse"
		}
		w := reorderGates(W.Raw[d*H4*I*4:(d+1)*H4*I*4], H, I, 4)
		r := reorderGates(R.Raw[d*H4*H*4:(d+1)*H4*H*4], H, H, 4)
		b := B.Raw[d*2*H4*4 : (d+1)*2*H4*4]
		wb := reorderGates(b[:H4*4], H, 1, 4)
		rb := reorderGates(b[H4*4:], H, 1, 4)
		for _, p := range []struct {
			name, src string
			shape     []int
			data      []byte
		}{
			{"weight_ih", n.Inputs[1], []int{H4, I}, w},
			{"weight_hh", n.Inputs[2], []int{H4, H}, r},
			{"bias_ih", n.Inputs[3], []int{H4}, wb},
			{"bias_hh", n.Inputs[3], []int{H4}, rb},
		} {
			if err := c.Add(base+"."+p.name+suffix, safetensors.F32, p.shape, p.data); err != nil {
				return err
			}
			c.From(p.src, base+"."+p.name+suffix)
		}
	}
	return nil
}

// reorderGates copies a [4H, cols] block matrix of size-byte elements from
// ONNX gate order (i, o, f, c) to PyTorch's (i, f, g, o).
func reorderGates(src []byte, H, cols, size int) []byte {
	blk := H * cols * size
	out := make([]byte, 0, 4*blk)
	for _, k := range onnxToTorchGates {
		out = append(out, src[k*blk:(k+1)*blk]...)
	}
	return out
}
