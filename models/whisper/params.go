package whisper

import (
	"fmt"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/safetensors"
)

// param is one tensor of the artifact, by reference (the bytes alias the
// mapped file and are never copied).
type param struct {
	name  string
	dtype graph.DType
	shape graph.Shape
	data  []byte
}

// in adds the param to g.
func (p param) in(g *graph.Graph) graph.Tensor { return g.Param(p.name, p.dtype, p.shape, p.data) }

// qparam is a quantized weight: w = (q − zero)·scale, per tensor.
type qparam struct {
	q, scale, zero param
}

// dequantized returns the float32 weight. It depends on weights only, so
// the engine computes it once and caches it.
func (p qparam) dequantized(g *graph.Graph) graph.Tensor {
	return p.q.in(g).Dequantize(p.scale.in(g), p.zero.in(g))
}

// linear is a Linear layer: weight [out, in] (PyTorch layout) and an
// optional bias [out] (bias.data is nil when the layer has none).
type linear struct {
	w    qparam
	bias param
}

// conv is a Conv1d layer: weight [out, in, k], bias [out].
type conv struct {
	w    qparam
	bias param
}

// norm is a LayerNorm's affine parameters.
type norm struct{ w, b param }

// attention is one multi-head attention's projections (k has no bias).
type attention struct{ q, k, v, out linear }

// encoderLayer is one pre-LN block of the encoder.
type encoderLayer struct {
	attnLN   norm
	attn     attention
	mlpLN    norm
	fc1, fc2 linear
}

// decoderLayer is one pre-LN block of the decoder.
type decoderLayer struct {
	selfLN   norm
	self     attention
	crossLN  norm
	cross    attention
	mlpLN    norm
	fc1, fc2 linear
}

// params holds every weight of the model.
type params struct {
	conv1, conv2 conv
	encPos       param // [1500, d]
	enc          []encoderLayer
	encLN        norm

	embed  qparam // [vocab, d]: token embedding and output projection
	decPos param  // [448, d]
	dec    []decoderLayer
	decLN  norm
}

// loader reads params from an artifact and checks their shapes.
type loader struct {
	a   *weights.Artifact
	err error
}

func dtypeOf(d safetensors.DType) (graph.DType, bool) {
	switch d {
	case safetensors.F32:
		return graph.F32, true
	case safetensors.U8:
		return graph.U8, true
	case safetensors.I8:
		return graph.I8, true
	}
	return 0, false
}

// tensor returns the named tensor, which must have the given dtype and shape
// (dt 0: U8 or I8).
func (l *loader) tensor(name string, dt graph.DType, shape ...int) param {
	if l.err != nil {
		return param{}
	}
	t, err := l.a.Tensor(name)
	if err != nil {
		l.err = fmt.Errorf("whisper: %w", err)
		return param{}
	}
	got, ok := dtypeOf(t.DType)
	switch {
	case !ok, dt != 0 && got != dt, dt == 0 && got != graph.U8 && got != graph.I8:
		l.err = fmt.Errorf("whisper: %s %q is %s, want %v", l.a.ID, name, t.DType, dt)
		return param{}
	case !graph.Shape(t.Shape).Equal(shape):
		l.err = fmt.Errorf("whisper: %s %q has shape %v, want %v", l.a.ID, name, t.Shape, shape)
		return param{}
	}
	return param{name: name, dtype: got, shape: graph.Shape(shape).Clone(), data: t.Data}
}

func (l *loader) f32(name string, shape ...int) param { return l.tensor(name, graph.F32, shape...) }

// quantized reads name (U8 or I8) with its per-tensor scale and zero point.
func (l *loader) quantized(name string, shape ...int) qparam {
	q := l.tensor(name, 0, shape...)
	p := qparam{q: q, scale: l.f32(name + "_scale")}
	p.zero = l.tensor(name+"_zero_point", q.dtype)
	return p
}

func (l *loader) linear(prefix string, out, in int, bias bool) linear {
	lin := linear{w: l.quantized(prefix+".weight", out, in)}
	if bias {
		lin.bias = l.f32(prefix+".bias", out)
	}
	return lin
}

func (l *loader) norm(prefix string, d int) norm {
	return norm{w: l.f32(prefix+".weight", d), b: l.f32(prefix+".bias", d)}
}

func (l *loader) attention(prefix string, d int) attention {
	return attention{
		q:   l.linear(prefix+".q_proj", d, d, true),
		k:   l.linear(prefix+".k_proj", d, d, false),
		v:   l.linear(prefix+".v_proj", d, d, true),
		out: l.linear(prefix+".out_proj", d, d, true),
	}
}

// loadParams reads every weight the model uses, checking names, dtypes and
// shapes against c.
func loadParams(a *weights.Artifact, c Config) (*params, error) {
	l := &loader{a: a}
	d := c.DModel
	p := &params{
		conv1:  conv{w: l.quantized("encoder.conv1.weight", d, c.NMels, 3), bias: l.f32("encoder.conv1.bias", d)},
		conv2:  conv{w: l.quantized("encoder.conv2.weight", d, d, 3), bias: l.f32("encoder.conv2.bias", d)},
		encPos: l.f32("encoder.embed_positions.weight", c.AudioCtx, d),
		encLN:  l.norm("encoder.layer_norm", d),
		embed:  l.quantized("decoder.embed_tokens.weight", c.Vocab, d),
		decPos: l.f32("decoder.embed_positions.weight", c.TextCtx, d),
		decLN:  l.norm("decoder.layer_norm", d),
	}
	for i := range c.EncoderLayers {
		pre := fmt.Sprintf("encoder.layers.%d", i)
		p.enc = append(p.enc, encoderLayer{
			attnLN: l.norm(pre+".self_attn_layer_norm", d),
			attn:   l.attention(pre+".self_attn", d),
			mlpLN:  l.norm(pre+".final_layer_norm", d),
			fc1:    l.linear(pre+".fc1", c.EncoderFFN, d, true),
			fc2:    l.linear(pre+".fc2", d, c.EncoderFFN, true),
		})
	}
	for i := range c.DecoderLayers {
		pre := fmt.Sprintf("decoder.layers.%d", i)
		p.dec = append(p.dec, decoderLayer{
			selfLN:  l.norm(pre+".self_attn_layer_norm", d),
			self:    l.attention(pre+".self_attn", d),
			crossLN: l.norm(pre+".encoder_attn_layer_norm", d),
			cross:   l.attention(pre+".encoder_attn", d),
			mlpLN:   l.norm(pre+".final_layer_norm", d),
			fc1:     l.linear(pre+".fc1", c.DecoderFFN, d, true),
			fc2:     l.linear(pre+".fc2", d, c.DecoderFFN, true),
		})
	}
	if l.err != nil {
		return nil, l.err
	}
	return p, nil
}
