package weights

import (
	"context"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// convertWhisper names the tensors of Xenova's int8 Whisper export the way
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
func convertWhisper(ctx context.Context, src func(string) string) (*conversion, error) {
	c := newConversion()
	ok := false
	defer func() {
		if !ok {
			c.close()
		}
	}()
	for _, part := range []struct{ file, prefix string }{
		{"encoder_model_quantized.onnx", "encoder."},
		{"decoder_model_merged_quantized.onnx", "decoder."},
	} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := c.openONNX(src(part.file))
		if err != nil {
			return nil, err
		}
		if err := whisperGraph(c, m.Graph, part.prefix); err != nil {
			return nil, fmt.Errorf("%s: %w", part.file, err)
		}
	}
	c.note("MatMulInteger weights are transposed from the ONNX [in,out] to PyTorch [out,in]; scale/zero point are per tensor")
	c.note("decoder.embed_tokens.weight doubles as the output projection (proj_out is tied; the ONNX dequantizes and transposes it for the logits MatMul)")
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

func anonymous(name string) bool {
	return strings.HasPrefix(name, "onnx::") || strings.HasPrefix(name, "/")
}

func whisperGraph(c *conversion, g *onnx.Graph, prefix string) error {
	ix := indexGraph(g)
	claimed := map[string]bool{}
	for _, name := range ix.order {
		base, isQ := strings.CutSuffix(name, "_quantized")
		if !isQ {
			continue
		}
		t := ix.consts[name]
		scale, zp := ix.consts[base+"_scale"], ix.consts[base+"_zero_point"]
		if scale == nil || zp == nil {
			return fmt.Errorf("%s: no %s_scale / %s_zero_point", name, base, base)
		}
		mm := ix.usesBy(name, "MatMulInteger")
		var pt string
		if anonymous(base) {
			for _, u := range mm {
				s := whisperName(scope(u.n.Name), prefix) + ".weight"
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
			if u.idx != 1 {
				return fmt.Errorf("%s: used as MatMulInteger input %d, want 1 (the weight)", name, u.idx)
			}
		}
		if err := addQuantized(c, pt, t, scale, zp, len(mm) > 0); err != nil {
			return err
		}
		claimed[name], claimed[base+"_scale"], claimed[base+"_zero_point"] = true, true, true
	}
	for _, name := range ix.order {
		t := ix.consts[name]
		if claimed[name] || anonymous(name) || t.DataType != onnx.Float || t.NumElements() == 0 {
			continue // the with-past branch returns empty constants as dummy "present.*.encoder" outputs
		}
		if err := c.add(whisperName(name, prefix), safetensors.F32, t.Shape(), t.Raw); err != nil {
			return err
		}
		c.from(name, whisperName(name, prefix))
		claimed[name] = true
	}
	if left := ix.unused(claimed, 2); len(left) > 0 {
		return fmt.Errorf("float constants no rule names: %s", strings.Join(left, ", "))
	}
	return nil
}

// addQuantized stores a quantized weight with its scale and zero point as
// name, name_scale, name_zero_point. A MatMul weight is transposed from
// [in,out] to [out,in]; a per-output-channel scale (one per column of the
// ONNX matrix) then runs along axis 0, as for convolutions.
func addQuantized(c *conversion, name string, q, scale, zp *onnx.Tensor, matmul bool) error {
	dt, err := stDType(q.DataType)
	if err != nil {
		return fmt.Errorf("%s: %w", q.Name, err)
	}
	if dt != safetensors.U8 && dt != safetensors.I8 {
		return fmt.Errorf("%s: quantized weight is %s", q.Name, q.DataType)
	}
	if zp.DataType != q.DataType || scale.DataType != onnx.Float || scale.NumElements() != zp.NumElements() {
		return fmt.Errorf("%s: scale %s%v / zero point %s%v do not fit a %s weight", q.Name, scale.DataType, scale.Dims, zp.DataType, zp.Dims, q.DataType)
	}
	shape, data := q.Shape(), q.Raw
	if matmul {
		if len(shape) != 2 {
			return fmt.Errorf("%s: MatMul weight of rank %d", q.Name, len(shape))
		}
		data = transpose2D(data, shape[0], shape[1], 1)
		shape = []int{shape[1], shape[0]}
	}
	if n := int(scale.NumElements()); n != 1 && (len(shape) == 0 || n != shape[0]) {
		return fmt.Errorf("%s: %d scales for shape %v: only per-tensor or per-output-channel is supported", q.Name, n, shape)
	}
	sshape := scale.Shape()
	if scale.NumElements() == 1 {
		sshape = []int{} // a [1] scale is per tensor too: store it as a scalar
	}
	if err := c.add(name, dt, shape, data); err != nil {
		return err
	}
	c.from(q.Name, name)
	c.from(scale.Name, name+"_scale")
	c.from(zp.Name, name+"_zero_point")
	if err := c.add(name+"_scale", safetensors.F32, sshape, scale.Raw); err != nil {
		return err
	}
	return c.add(name+"_zero_point", dt, sshape, zp.Raw)
}
