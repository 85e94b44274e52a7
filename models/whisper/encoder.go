package whisper

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/graph"
)

// encoder builds the audio encoder on features [B, nMels, 3000] and returns
// its output [1500, d] for one window, [B, 1500, d] for several.
func (m *Model) encoder(n net, features graph.Tensor) graph.Tensor {
	p, c := m.p, m.cfg
	x := n.gelu(n.conv(features, &p.conv1, 1))
	x = n.gelu(n.conv(x, &p.conv2, 2)) // [B, d, 1500]
	if x.Dim(0) == 1 {
		x = x.Squeeze(0).T()
	} else {
		x = x.Permute(0, 2, 1)
	}
	x = x.Add(p.encPos.in(n.g))
	for i := range p.enc {
		l := &p.enc[i]
		x = x.Add(n.selfAttention(n.layerNorm(x, &l.attnLN), &l.attn, c.EncoderHeads))
		x = x.Add(n.mlp(n.layerNorm(x, &l.mlpLN), &l.fc1, &l.fc2))
	}
	return n.layerNorm(x, &p.encLN)
}

// selfAttention is the encoder's unmasked multi-head self-attention on x
// [s, d].
func (n net) selfAttention(x graph.Tensor, a *attention, heads int) graph.Tensor {
	q, k, v := n.qkv(x, a, headScale(x.Dim(-1)/heads))
	o := attend(splitHeads(q, heads), splitHeads(k, heads), splitHeads(v, heads), graph.Tensor{})
	return n.linear(mergeHeads(o), &a.out)
}

// checkFeatures checks that features hold one window of log-mel frames.
func (m *Model) checkFeatures(features []float32) error {
	if want := m.cfg.NMels * m.cfg.Frames(); len(features) != want {
		return fmt.Errorf("whisper: features hold %d values, want %d mel bands × %d frames = %d", len(features), m.cfg.NMels, m.cfg.Frames(), want)
	}
	return nil
}

// EncoderOutput runs the encoder on one window of log-mel features
// ([nMels, 3000], band-major, as dsp/mel computes them) and returns its
// last hidden state [1500, d].
func (m *Model) EncoderOutput(ctx context.Context, features []float32) ([]float32, error) {
	if err := m.checkFeatures(features); err != nil {
		return nil, err
	}
	g := graph.New()
	x := g.InputF32("features", graph.Shape{1, m.cfg.NMels, m.cfg.Frames()}, features)
	vals, err := m.eng.Eval(ctx, m.encoder(m.net(g, 1), x))
	if err != nil {
		return nil, fmt.Errorf("whisper: encoder: %w", err)
	}
	return vals[0].F32(), nil
}
