package whisper

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// encoder is WhisperEncoder: conv1 (k3) → GELU → conv2 (k3, stride 2) →
// GELU → + embed_positions → layers → layer_norm.
type encoder struct {
	conv1, conv2 conv
	pos          param.Tensor // embed_positions.weight [1500, d]
	layers       []encoderLayer
	ln           layerNorm
}

func newEncoder(s *param.Scope, c Config) *encoder {
	d := c.DModel
	e := &encoder{
		conv1: newConv(s.Sub("conv1"), d, c.NMels),
		conv2: newConv(s.Sub("conv2"), d, d),
		pos:   s.F32("embed_positions.weight", c.AudioCtx, d),
		ln:    newLayerNorm(s.Sub("layer_norm"), d),
	}
	for i := range c.EncoderLayers {
		e.layers = append(e.layers, newEncoderLayer(s.Sub("layers").Index(i), c))
	}
	return e
}

// forward runs the encoder on features [B, nMels, F] (F even, at most
// 3000) and returns its output [F/2, d] for one window, [B, F/2, d] for
// several. A window shorter than 30 s takes the first F/2 learned
// positions and attends over its own positions only.
func (e *encoder) forward(a arith, features graph.Tensor) graph.Tensor {
	x := a.gelu(a.conv(features, &e.conv1, 1))
	x = a.gelu(a.conv(x, &e.conv2, 2)) // [B, d, F/2]
	if x.Dim(0) == 1 {
		x = x.Squeeze(0).T()
	} else {
		x = x.Permute(0, 2, 1)
	}
	pos := e.pos.In(features.Graph())
	if s := x.Dim(-2); s < pos.Dim(0) {
		pos = pos.Slice(0, 0, s)
	}
	x = x.Add(pos)
	for i := range e.layers {
		x = e.layers[i].forward(a, x)
	}
	return a.layerNorm(x, &e.ln)
}

// encoderLayer is WhisperEncoderLayer: pre-LN self-attention and MLP, each
// added to its input.
type encoderLayer struct {
	selfAttnLN layerNorm // self_attn_layer_norm
	selfAttn   attention
	mlp        mlp // final_layer_norm, fc1, fc2
}

func newEncoderLayer(s *param.Scope, c Config) encoderLayer {
	return encoderLayer{
		selfAttnLN: newLayerNorm(s.Sub("self_attn_layer_norm"), c.DModel),
		selfAttn:   newAttention(s.Sub("self_attn"), c.DModel, c.EncoderHeads),
		mlp:        newMLP(s, c.DModel, c.EncoderFFN),
	}
}

func (l *encoderLayer) forward(a arith, x graph.Tensor) graph.Tensor {
	x = x.Add(l.selfAttn.forward(a, a.layerNorm(x, &l.selfAttnLN)))
	return l.mlp.forward(a, x)
}

// checkFeatures checks that features hold one window of log-mel frames,
// [nMels, F] with F even and at most 3000, and returns F.
func (m *Model) checkFeatures(features []float32) (int, error) {
	n, W := m.cfg.NMels, m.cfg.Frames()
	f := len(features) / n
	if len(features)%n != 0 || f < 2 || f > W || f%2 != 0 {
		return 0, fmt.Errorf("whisper: features hold %d values, want %d mel bands × an even number of frames from 2 to %d (%d for a 30-s window)", len(features), n, W, n*W)
	}
	return f, nil
}

// EncoderOutput runs the encoder on one window of log-mel features
// ([nMels, F], band-major, as dsp/mel computes them; F even, 3000 for a
// 30-second window) and returns its last hidden state [F/2, d].
func (m *Model) EncoderOutput(ctx context.Context, features []float32) ([]float32, error) {
	f, err := m.checkFeatures(features)
	if err != nil {
		return nil, err
	}
	g := graph.New()
	x := g.InputF32("features", graph.Shape{1, m.cfg.NMels, f}, features)
	vals, err := m.eng.Eval(ctx, m.enc.forward(m.encoderArith(g), x))
	if err != nil {
		return nil, fmt.Errorf("whisper: encoder: %w", err)
	}
	return vals[0].F32(), nil
}
