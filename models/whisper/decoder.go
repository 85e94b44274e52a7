package whisper

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/models/param"
)

// decoder is WhisperDecoder: embed_tokens (also the output projection:
// proj_out is tied to it), embed_positions, layers and layer_norm.
type decoder struct {
	embed  param.Quantized // embed_tokens.weight [vocab, d]
	pos    param.Tensor    // embed_positions.weight [448, d]
	layers []decoderLayer
	ln     layerNorm
}

func newDecoder(s *param.Scope, c Config) *decoder {
	d := &decoder{
		embed: s.Quantized("embed_tokens.weight", c.Vocab, c.DModel),
		pos:   s.F32("embed_positions.weight", c.TextCtx, c.DModel),
		ln:    newLayerNorm(s.Sub("layer_norm"), c.DModel),
	}
	for i := range c.DecoderLayers {
		d.layers = append(d.layers, newDecoderLayer(s.Sub("layers").Index(i), c))
	}
	return d
}

// decoderLayer is WhisperDecoderLayer: pre-LN masked self-attention,
// cross-attention on the encoder output (encoder_attn) and MLP, each added
// to its input.
type decoderLayer struct {
	selfAttnLN  layerNorm // self_attn_layer_norm
	selfAttn    attention
	crossAttnLN layerNorm // encoder_attn_layer_norm
	crossAttn   attention // encoder_attn
	mlp         mlp       // final_layer_norm, fc1, fc2
}

func newDecoderLayer(s *param.Scope, c Config) decoderLayer {
	d := c.DModel
	return decoderLayer{
		selfAttnLN:  newLayerNorm(s.Sub("self_attn_layer_norm"), d),
		selfAttn:    newAttention(s.Sub("self_attn"), d, c.DecoderHeads),
		crossAttnLN: newLayerNorm(s.Sub("encoder_attn_layer_norm"), d),
		crossAttn:   newAttention(s.Sub("encoder_attn"), d, c.DecoderHeads),
		mlp:         newMLP(s, d, c.DecoderFFN),
	}
}

// crossAttentions lists every layer's encoder_attn, whose key and value
// projections of a window's encoder output are computed once per window.
func (d *decoder) crossAttentions() []*attention {
	out := make([]*attention, len(d.layers))
	for i := range d.layers {
		out[i] = &d.layers[i].crossAttn
	}
	return out
}

// decoderPass is what one run of the decoder attends over besides its
// tokens: the window's cross-attention keys and values per layer, where
// the self-attention keys and values go, and an optional probe of the
// cross-attention (see attention.forwardCross).
type decoderPass struct {
	crossK, crossV []*graph.State // per layer: [heads, dh, 1500], or [slots, heads, dh, 1500] for a Batch
	slots          int            // a Batch's first slots that the run reads (0: all)
	kv             *selfKV        // nil: attend over the tokens given only
	probe          func(layer int, qh, kT graph.Tensor)
}

// cross returns layer i's cross-attention keys and values.
func (p *decoderPass) cross(g *graph.Graph, i int) (k, v graph.Tensor) {
	k, v = g.ReadState(p.crossK[i]), g.ReadState(p.crossV[i])
	if p.slots > 0 {
		k, v = k.Slice(0, 0, p.slots), v.Slice(0, 0, p.slots)
	}
	return k, v
}

// forward embeds ids [B, n] at positions [n] (I64), or [B, n] when the
// B sequences stand at lengths of their own (a Batch), runs the layers,
// each query seeing the attended positions up to its own of cols, and
// returns the final normalised states [B, n, d].
func (d *decoder) forward(a arith, ids, positions graph.Tensor, cols int, p decoderPass) graph.Tensor {
	g := ids.Graph()
	e := &d.embed
	x := e.Q.In(g).Gather(0, ids).Dequantize(e.Scale.In(g), e.Zero.In(g)) // as the export: gather, then dequantize
	x = x.Add(d.pos.In(g).Gather(0, positions))
	mask := causalMask(positions, cols)
	for i := range d.layers {
		var probe func(qh, kT graph.Tensor)
		if p.probe != nil {
			probe = func(qh, kT graph.Tensor) { p.probe(i, qh, kT) }
		}
		kT, vT := p.cross(g, i)
		x = d.layers[i].forward(a, x, mask, i, p.kv, kT, vT, probe)
	}
	return a.layerNorm(x, &d.ln)
}

func (l *decoderLayer) forward(a arith, x, mask graph.Tensor, i int, kv *selfKV, crossK, crossV graph.Tensor, probe func(qh, kT graph.Tensor)) graph.Tensor {
	x = x.Add(l.selfAttn.forwardCached(a, a.layerNorm(x, &l.selfAttnLN), mask, kv, i))
	x = x.Add(l.crossAttn.forwardCross(a, a.layerNorm(x, &l.crossAttnLN), crossK, crossV, probe))
	return l.mlp.forward(a, x)
}

// logits is the output projection of states [rows, d]: x · embed_tokensᵀ
// (see arith.logits).
func (d *decoder) logits(a arith, x graph.Tensor) graph.Tensor {
	return a.logits(x, &d.embed)
}

// selfKV appends a step's self-attention keys and values to a window's
// caches (per layer [beams, 448, d]) at the position pos (an I64 input: one
// for all rows, or one per row of a Batch) and returns the first length
// positions, which the step attends over. A nil selfKV returns them as they
// are.
type selfKV struct {
	k, v   []*graph.State
	pos    graph.Tensor
	length int
	slots  int // a Batch's first slots that the run computes (0: all rows)
}

func (c *selfKV) keys(layer int, k graph.Tensor) graph.Tensor {
	if c == nil {
		return k
	}
	return c.append(c.k[layer], k)
}

func (c *selfKV) values(layer int, v graph.Tensor) graph.Tensor {
	if c == nil {
		return v
	}
	return c.append(c.v[layer], v)
}

func (c *selfKV) append(st *graph.State, t graph.Tensor) graph.Tensor {
	if rows := st.Shape()[0]; c.slots > 0 && c.slots < rows {
		// The other slots get zeros at their next position, which
		// their own next step overwrites before it is read.
		t = t.Pad(kernels.PadConstant, 0, []int{0, 0, 0}, []int{rows - c.slots, 0, 0})
		return t.Graph().UpdateState(st, t, 1, c.pos).Slice(0, 0, c.slots).Slice(1, 0, c.length)
	}
	return t.Graph().UpdateState(st, t, 1, c.pos).Slice(1, 0, c.length)
}
