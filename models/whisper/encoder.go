package whisper

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/graph"
)

// encoder builds the audio encoder on features [B, nMels, F] (F even, at
// most 3000) and returns its output [F/2, d] for one window, [B, F/2, d] for
// several. A window shorter than 30 s takes the first F/2 learned positions
// and attends over its own positions only.
func (m *Model) encoder(n net, features graph.Tensor) graph.Tensor {
	p, c := m.p, m.cfg
	x := n.gelu(n.conv(features, &p.conv1, 1))
	x = n.gelu(n.conv(x, &p.conv2, 2)) // [B, d, F/2]
	if x.Dim(0) == 1 {
		x = x.Squeeze(0).T()
	} else {
		x = x.Permute(0, 2, 1)
	}
	pos := p.encPos.in(n.g)
	if s := x.Dim(-2); s < c.AudioCtx {
		pos = pos.Slice(0, 0, s)
	}
	x = x.Add(pos)
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
	vals, err := m.eng.Eval(ctx, m.encoder(m.net(g, 1), x))
	if err != nil {
		return nil, fmt.Errorf("whisper: encoder: %w", err)
	}
	return vals[0].F32(), nil
}
