package whisper

import (
	"math"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// attention is WhisperAttention: q_proj, k_proj (no bias), v_proj and
// out_proj over heads of d/heads. Its three forwards are the three ways
// Whisper attends: the encoder's self-attention, the decoder's masked
// self-attention over its key/value caches, and the decoder's
// cross-attention over the window's encoder output.
type attention struct {
	q, k, v, out linear
	heads        int
}

func newAttention(s *param.Scope, d, heads int) attention {
	return attention{
		q:     newLinear(s.Sub("q_proj"), d, d, true),
		k:     newLinear(s.Sub("k_proj"), d, d, false),
		v:     newLinear(s.Sub("v_proj"), d, d, true),
		out:   newLinear(s.Sub("out_proj"), d, d, true),
		heads: heads,
	}
}

// scale is dh^-½ (0.125 for Whisper's heads of 64), which the export
// multiplies the query by after its bias.
func (m *attention) scale() float64 {
	return 1 / math.Sqrt(float64(m.q.w.Q.Shape[0]/m.heads))
}

// forward is unmasked self-attention on x [..., s, d] (the encoder's).
func (m *attention) forward(a arith, x graph.Tensor) graph.Tensor {
	H := m.heads
	q, k, v := a.qkv(x, m, m.scale())
	o := attend(splitHeads(q, H), splitHeads(k, H), splitHeads(v, H), graph.Tensor{})
	return a.linear(mergeHeads(o), &m.out)
}

// forwardCached is the decoder's masked self-attention of x [B, n, d]:
// the keys and values of the new positions go through kv (appended to
// layer's caches in a step; nil kv attends over x's own positions) and
// mask hides the future.
func (m *attention) forwardCached(a arith, x, mask graph.Tensor, kv *selfKV, layer int) graph.Tensor {
	H := m.heads
	q := a.linear(x, &m.q).MulScalar(m.scale())
	k := kv.keys(layer, a.linear(x, &m.k))
	v := kv.values(layer, a.linear(x, &m.v))
	o := attend(splitHeads(q, H), splitHeads(k, H), splitHeads(v, H), mask)
	return a.linear(mergeHeads(o), &m.out)
}

// forwardCross is the decoder's cross-attention of x [B, n, d] over the
// window's keys and values kT and vT, held per head transposed ([heads,
// dh, 1500]: see session) and shared by all hypotheses (or [B, heads, dh,
// 1500], a window per row of a Batch). probe, when not nil, sees the query
// heads [B, heads, n, dh] and the keys (align reads the attention weights
// of chosen heads).
func (m *attention) forwardCross(a arith, x, kT, vT graph.Tensor, probe func(qh, kT graph.Tensor)) graph.Tensor {
	q := a.linear(x, &m.q).MulScalar(m.scale())
	qh := splitHeads(q, m.heads)
	if probe != nil {
		probe(qh, kT)
	}
	o := attend(qh, kT.T(), vT.T(), graph.Tensor{})
	return a.linear(mergeHeads(o), &m.out)
}

// maskValue is what the causal mask adds to the scores of future positions:
// the export's ConstantOfShape value (the lowest float32), which softmax
// turns into an exact zero without the NaN risk of −Inf.
const maskValue = -3.4028234663852886e38

// causalMask is the additive mask [n, cols] that lets query i (at position
// positions[i]) see columns 0 … positions[i]; for positions [B, n] (each
// sequence of a batch at its own length) it is [B, 1, n, cols], shared by
// the heads.
func causalMask(positions graph.Tensor, cols int) graph.Tensor {
	g := positions.Graph()
	c := g.Arange(0, 1, cols, graph.I64).Reshape(1, cols)
	at := positions.Unsqueeze(-1) // [..., n, 1]
	if positions.Rank() == 2 {
		at = at.Unsqueeze(1) // [B, 1, n, 1]
	}
	return graph.Where(c.Le(at), g.Scalar(0, graph.F32), g.Scalar(maskValue, graph.F32))
}

// splitHeads views x [..., s, heads·dh] as [..., heads, s, dh] (strided, no
// copy: the matrix products read each head in place).
func splitHeads(x graph.Tensor, heads int) graph.Tensor {
	r := x.Rank()
	s, d := x.Dim(-2), x.Dim(-1)
	shape := append(x.Shape()[:r-2].Clone(), s, heads, d/heads)
	perm := make([]int, 0, r+1)
	for i := range r - 2 {
		perm = append(perm, i)
	}
	perm = append(perm, r-1, r-2, r)
	return x.Reshape(shape...).Permute(perm...)
}

// mergeHeads turns [..., heads, s, dh] back into [..., s, heads·dh].
func mergeHeads(x graph.Tensor) graph.Tensor {
	r := x.Rank()
	perm := make([]int, 0, r)
	for i := range r - 3 {
		perm = append(perm, i)
	}
	perm = append(perm, r-2, r-3, r-1)
	y := x.Permute(perm...)
	shape := append(y.Shape()[:r-2].Clone(), x.Dim(-3)*x.Dim(-1))
	return y.Reshape(shape...)
}

// attend is scaled dot-product attention on split heads: softmax(q·kᵀ +
// mask)·v, with q [..., n, dh] already scaled by dh^-½ (as the export does,
// after the projection's bias), k [..., s, dh] and v [..., s, dh] (views
// are read in place). mask may be the zero Tensor. One fused kernel: the
// score matrix never leaves the cache.
func attend(q, k, v, mask graph.Tensor) graph.Tensor {
	return q.Attention(k, v, mask)
}
