package vad

import (
	"context"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// convert names Silero VAD v6's weights. The ONNX (exported with
// spox) holds no initializers: the weights are Constant nodes inside the two
// branches of the top-level If on the sample rate, named
// "If_0_<branch>_branch__Inline_0__<pytorch name>". The branch taken for
// sr == 16000 gives the plain names (stft.forward_basis_buffer [258,1,256],
// encoder.0.reparam_conv.weight, decoder.rnn.weight_ih [512,128], ...); the
// 8 kHz branch gives the same names under "model_8k." (Silero's own
// attribute for its 8 kHz model), e.g. model_8k.stft.forward_basis_buffer
// [130,1,128].
//
// decoder.rnn.* are an LSTMCell's parameters in PyTorch's layout and gate
// order (i, f, g, o along the 512 rows); the graph slices and reorders them
// into ONNX's (i, o, f, c) for its LSTM node.
func convert(ctx context.Context, src func(string) string) (*weights.Conversion, error) {
	c := weights.NewConversion()
	m, err := c.OpenONNX(src("silero_vad.onnx"))
	if err != nil {
		return nil, err
	}
	if err := sileroGraph(c, m.Graph); err != nil {
		c.Close()
		return nil, err
	}
	c.Note("16 kHz branch under plain names, 8 kHz branch under model_8k.*")
	c.Note("decoder.rnn.* is an LSTMCell in PyTorch gate order i,f,g,o (rows of 128)")
	return c, nil
}

func sileroGraph(c *weights.Conversion, g *onnx.Graph) error {
	// Find which branch of the top-level If runs at 16 kHz: the If's
	// condition is Equal(sr, 16000) in this export; check rather than trust.
	ix := onnx.NewIndex(g)
	var ifNode *onnx.Node
	for _, n := range g.Nodes {
		if n.OpType == "If" {
			if ifNode != nil {
				return fmt.Errorf("more than one top-level If")
			}
			ifNode = n
		}
	}
	if ifNode == nil {
		return fmt.Errorf("no top-level If on the sample rate")
	}
	cond := ix.Producer[ifNode.Inputs[0]]
	if cond == nil || cond.OpType != "Equal" || len(cond.Inputs) != 2 || cond.Inputs[0] != "sr" {
		return fmt.Errorf("the If condition is not Equal(sr, constant)")
	}
	k := ix.Consts[cond.Inputs[1]]
	if k == nil {
		return fmt.Errorf("the If condition compares sr with a non-constant")
	}
	v, err := k.Int64s()
	if err != nil || len(v) != 1 {
		return fmt.Errorf("the If condition constant: %v", err)
	}
	prefix := map[string]string{}
	switch v[0] {
	case 16000:
		prefix["then_branch"], prefix["else_branch"] = "", "model_8k."
	case 8000:
		prefix["then_branch"], prefix["else_branch"] = "model_8k.", ""
	default:
		return fmt.Errorf("the If compares sr with %d, want 16000 or 8000", v[0])
	}
	claimed := map[string]bool{}
	for _, br := range []string{"then_branch", "else_branch"} {
		a, ok := ifNode.Attr(br)
		if !ok || a.G == nil {
			return fmt.Errorf("the If has no %s", br)
		}
		tag := ifNode.Name + "_" + br + "__Inline_0__"
		found := 0
		for _, name := range ix.Order {
			rest, ok := strings.CutPrefix(name, tag)
			if !ok || strings.HasPrefix(rest, "/") {
				continue
			}
			t := ix.Consts[name]
			if t.DataType != onnx.Float {
				continue
			}
			if err := c.Add(prefix[br]+rest, safetensors.F32, t.Shape(), t.Raw); err != nil {
				return err
			}
			c.From(name, prefix[br]+rest)
			claimed[name] = true
			found++
		}
		if found == 0 {
			return fmt.Errorf("no weights in %s (expected constants named %s<name>)", br, tag)
		}
	}
	if left := ix.Unused(claimed, 2); len(left) > 0 {
		return fmt.Errorf("float constants no rule names: %s", strings.Join(left, ", "))
	}
	return nil
}
