package whisper

import (
	"context"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// convert names the tensors of Xenova's int8 Whisper export the way
// Hugging Face's WhisperModel names them, without the leading "model.":
//
//   - encoder.conv1.weight U8 [384,80,3] + encoder.conv1.weight_scale F32 []
//   - encoder.conv1.weight_zero_point U8 [] (ConvInteger weights, PyTorch
//     layout);
//   - encoder.layers.0.self_attn.q_proj.weight U8 [out,in] + _scale +
//     _zero_point: MatMulInteger weights, stored [in,out] in the ONNX and
//     named from the consuming node's scope, transposed to PyTorch's
//     [out,in]; the decoder's are I8 with I8 zero points;
//   - decoder.embed_tokens.weight U8 [vocab,d] + scale + zero point, which
//     is also the output projection (proj_out is tied: the graph
//     transposes and dequantizes this same tensor for the logits MatMul);
//   - biases, layer norms and positional embeddings as F32 under their own
//     names.
//
// Scales and zero points are per tensor (shape []) in these files.
func convert(ctx context.Context, src func(string) string) (*weights.Conversion, error) {
	c := weights.NewConversion()
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	for _, part := range []struct{ file, prefix string }{
		{"encoder_model_quantized.onnx", "encoder."},
		{"decoder_model_merged_quantized.onnx", "decoder."},
	} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := c.OpenONNX(src(part.file))
		if err != nil {
			return nil, err
		}
		if err := whisperGraph(c, m.Graph, part.prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", part.file, err)
		}
	}
	c.Note("MatMulInteger weights are transposed from the ONNX [in,out] to PyTorch [out,in]; scale/zero point are per tensor")
	c.Note("decoder.embed_tokens.weight doubles as the output projection (proj_out is tied; the ONNX dequantizes and transposes it for the logits MatMul)")
	ok = true
	return c, nil
}

// whisperName maps an ONNX initializer name or node scope to the PyTorch
// name: "model.decoder.x" → "decoder.x"; the encoder export has no
// "model.encoder." prefix, so "conv1.bias" → "encoder.conv1.bias".
func whisperName(raw, prefix string) string {
	raw = strings.TrimSuffix(raw, "_merged_0")
	if s, ok := strings.CutPrefix(raw, "model."); ok {
		return s
	}
	return prefix + raw
}

func whisperGraph(c *weights.Conversion, g *onnx.Graph, prefix string) error {
	ix := onnx.NewIndex(g)
	claimed := map[string]bool{}
	for _, name := range ix.Order {
		base, isQ := strings.CutSuffix(name, "_quantized")
		if !isQ {
			continue
		}
		t := ix.Consts[name]
		scale, zp := ix.Consts[base+"_scale"], ix.Consts[base+"_zero_point"]
		if scale == nil || zp == nil {
			return fmt.Errorf("%s: no %s_scale / %s_zero_point", name, base, base)
		}
		mm := ix.UsesBy(name, "MatMulInteger")
		var pt string
		if onnx.Anonymous(base) {
			for _, u := range mm {
				s := whisperName(onnx.Scope(u.Node.Name), prefix) + ".weight"
				if pt != "" && s != pt {
					return fmt.Errorf("%s: consumers disagree on its name: %s vs %s", name, pt, s)
				}
				pt = s
			}
			if pt == "" {
				return fmt.Errorf("%s: anonymous weight without a MatMulInteger consumer", name)
			}
		} else {
			pt = whisperName(base, prefix)
		}
		for _, u := range mm {
			if u.Input != 1 {
				return fmt.Errorf("%s: used as MatMulInteger input %d, want 1 (the weight)", name, u.Input)
			}
		}
		if err := c.AddQuantized(pt, t, scale, zp, len(mm) > 0); err != nil {
			return err
		}
		claimed[name], claimed[base+"_scale"], claimed[base+"_zero_point"] = true, true, true
	}
	for _, name := range ix.Order {
		t := ix.Consts[name]
		if claimed[name] || onnx.Anonymous(name) || t.DataType != onnx.Float || t.NumElements() == 0 {
			continue // the with-past branch returns empty constants as dummy "present.*.encoder" outputs
		}
		if err := c.Add(whisperName(name, prefix), safetensors.F32, t.Shape(), t.Raw); err != nil {
			return err
		}
		c.From(name, whisperName(name, prefix))
		claimed[name] = true
	}
	if left := ix.Unused(claimed, 2); len(left) > 0 {
		return fmt.Errorf("float constants no rule names: %s", strings.Join(left, ", "))
	}
	return nil
}
