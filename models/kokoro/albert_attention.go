package kokoro

import "github.com/tensorforge/forge/graph"

// selfAttention is AlbertAttention up to its dense projection: softmax(q·kᵀ)·v
// over 12 heads of 64, for h [1, T, 768], merged back to [1, T, 768].
//
// The export computes it as written in the module: three products, q and k
// each scaled by √(1/√64), two batched products and a softmax between them,
// with the [12, T, T] scores stored. Here the three projections are one
// product on the concatenated weights (weight-only, so the engine builds it
// once) and the two scales are one factor of 1/8 folded into the query's
// weight and bias, exact as a power of two; the heads are views of that
// product's output, which the fused attention reads in place, so the
// scores never leave the cache. On a sentence of 188 tokens (say's
// benchmark paragraph) ALBERT took 144–153 ms instead of 165–178 ms, best
// of 10 (Intel Xeon, family 6 model 207, 2 cores).
func (m *albertLayer) selfAttention(h graph.Tensor) graph.Tensor {
	g := h.Graph()
	T := h.Dim(1)
	const dh = albertHidden / albertHeads
	const scale = 0.125 // (√(1/√dh))², the export's factor on q and on k
	w := graph.Concat(0, m.query.w.In(g).MulScalar(scale), m.key.w.In(g), m.value.w.In(g))
	b := graph.Concat(0, m.query.b.In(g).MulScalar(scale), m.key.b.In(g), m.value.b.In(g))
	y := h.Linear(w, b)                 // [1, T, 3·768]
	heads := func(i int) graph.Tensor { // [1, T, 768] → [1, heads, T, 64]
		return y.Slice(-1, i*albertHidden, (i+1)*albertHidden).Reshape(1, T, albertHeads, dh).Permute(0, 2, 1, 3)
	}
	att := heads(0).Attention(heads(1), heads(2), graph.Tensor{}) // [1, heads, T, 64]
	return att.Permute(0, 2, 1, 3).Reshape(1, T, albertHidden)
}
