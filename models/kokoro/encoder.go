package kokoro

import (
	"github.com/tensorforge/forge/graph"
)

// The model's fixed sizes (config.json of hexgrad/Kokoro-82M).
const (
	albertLayers = 12  // plbert num_hidden_layers; one shared layer, applied 12 times
	albertHeads  = 12  // plbert num_attention_heads
	albertHidden = 768 // plbert hidden_size
	hiddenDim    = 512 // hidden_dim
	styleDim     = 128 // style_dim: each half of the 256-wide style vector
	maxPosition  = 512 // plbert max_position_embeddings: at most 510 phonemes + 2 pads
)

// albert is CustomAlbert (transformers' AlbertModel, last hidden state) on
// ids [1, T]: embeddings, a 128→768 projection, then one transformer layer
// whose weights are shared by all twelve applications. The attention mask
// is all ones for a single unpadded sequence, so it is left out.
func (n *net) albert(ids graph.Tensor) graph.Tensor {
	T := ids.Dim(1)
	const pre = "bert.embeddings."
	word := n.p(pre+"word_embeddings.weight").Gather(0, ids)            // [1, T, 128]
	tokenType := n.p(pre+"token_type_embeddings.weight").Slice(0, 0, 1) // type 0 for every token
	position := n.p(pre+"position_embeddings.weight").Slice(0, 0, T)    // positions 0..T-1
	x := word.Add(tokenType).Add(position)
	x = x.LayerNorm(n.p(pre+"LayerNorm.weight"), n.p(pre+"LayerNorm.bias"), 1e-12)
	h := n.linear("bert.encoder.embedding_hidden_mapping_in", x) // [1, T, 768]
	for range albertLayers {
		h = n.albertLayer("bert.encoder.albert_layer_groups.0.albert_layers.0.", h)
	}
	return h
}

// albertLayer is AlbertLayer: self-attention and a GELU (tanh) feed-forward
// block, each followed by a residual LayerNorm.
func (n *net) albertLayer(pre string, h graph.Tensor) graph.Tensor {
	T := h.Dim(1)
	const dh = albertHidden / albertHeads
	heads := func(name string) graph.Tensor { // [1, T, 768] → [1, heads, T, 64]
		return n.linear(pre+"attention."+name, h).Reshape(1, T, albertHeads, dh).Permute(0, 2, 1, 3)
	}
	// Both q and k are scaled by √(1/√dh), as the exported graph does.
	scale := n.scalar(0.35355339059327373)
	q := heads("query").Mul(scale)
	k := heads("key").Mul(scale)
	v := heads("value")
	att := q.MatMul(k.T()).Softmax(-1).MatMul(v) // [1, heads, T, 64]
	ctx := att.Permute(0, 2, 1, 3).Reshape(1, T, albertHidden)
	a := h.Add(n.linear(pre+"attention.dense", ctx))
	a = a.LayerNorm(n.p(pre+"attention.LayerNorm.weight"), n.p(pre+"attention.LayerNorm.bias"), 1e-12)
	f := n.linear(pre+"ffn_output", n.linear(pre+"ffn", a).GeluTanh())
	return f.Add(a).LayerNorm(n.p(pre+"full_layer_layer_norm.weight"), n.p(pre+"full_layer_layer_norm.bias"), 1e-12)
}

// textEncoder is TextEncoder on ids [1, T]: embedding, three blocks of
// Conv1d(k=5) → LayerNorm over channels → LeakyReLU(0.2), then a
// bidirectional LSTM. It returns t_en [1, 512, T].
func (n *net) textEncoder(ids graph.Tensor) graph.Tensor {
	x := n.p("text_encoder.embedding.weight").Gather(0, ids).Transpose(1, 2) // [1, 512, T]
	for i := range 3 {
		pre := "text_encoder.cnn." + itoa(i) + "."
		x = n.conv1d(pre+"0", x, true, graph.ConvOpts{Padding: 2})
		x = x.Transpose(1, 2).LayerNorm(n.p(pre+"1.gamma"), n.p(pre+"1.beta"), 1e-5).Transpose(1, 2)
		x = x.LeakyRelu(0.2)
	}
	return n.lstm("text_encoder.lstm", x.Transpose(1, 2)).Transpose(1, 2)
}

// durationEncoder is DurationEncoder on d_en [1, T, 512] and the prosody
// style s [1, 128]: three rounds of a bidirectional LSTM followed by an
// AdaLayerNorm, the style concatenated to the features before each LSTM and
// after the last norm. It returns d [1, T, 640].
func (n *net) durationEncoder(dEn, s graph.Tensor) graph.Tensor {
	T := dEn.Dim(1)
	st := s.Unsqueeze(1).Expand(graph.Shape{1, T, styleDim}) // [1, T, 128]
	x := graph.Concat(2, dEn, st)
	for i := 0; i < 6; i += 2 {
		pre := "predictor.text_encoder.lstms."
		x = n.lstm(pre+itoa(i), x)
		x = n.adaLayerNorm(pre+itoa(i+1), x, s)
		x = graph.Concat(2, x, st)
	}
	return x
}

// adaLayerNorm is AdaLayerNorm on x [1, T, C]: a LayerNorm over channels
// without affine weights, scaled by 1+γ and shifted by β from fc(s).
func (n *net) adaLayerNorm(pre string, x, s graph.Tensor) graph.Tensor {
	C := x.Dim(2)
	h := n.linear(pre+".fc", s) // [1, 2C]
	gamma, beta := h.Slice(1, 0, C).Unsqueeze(1), h.Slice(1, C, 2*C).Unsqueeze(1)
	xn := x.LayerNorm(graph.Tensor{}, graph.Tensor{}, 1e-5)
	return gamma.AddScalar(1).Mul(xn).Add(beta)
}

// durations is the duration head: the predictor's LSTM over d, a linear
// projection to 50 bins, their sigmoids summed, divided by speed, rounded
// half to even and clamped to at least one frame. It returns the float
// durations [1, T] (pred_dur_float) and the integer ones [T] (pred_dur).
func (n *net) durations(d, speed graph.Tensor) (graph.Tensor, graph.Tensor) {
	x := n.lstm("predictor.lstm", d)
	logits := n.linear("predictor.duration_proj.linear_layer", x) // [1, T, 50]
	dur := logits.Sigmoid().Sum(false, -1).Div(speed)             // [1, T]
	frames := dur.Round().Maximum(n.scalar(1)).Cast(graph.I64).Reshape(-1)
	return dur, frames
}

// stage1 holds the outputs of the text stage for one utterance.
type stage1 struct {
	durFloat graph.Tensor // [1, T] f32
	dur      graph.Tensor // [T] i64
	d        graph.Tensor // [1, T, 640]: duration-encoder features, aligned for F0/N
	tEn      graph.Tensor // [1, 512, T]: text-encoder features, aligned for the decoder
}

// textStage builds everything that depends only on the phoneme ids and the
// style: ALBERT, the duration encoder and head, and the text encoder.
func (n *net) textStage(ids, style, speed graph.Tensor) stage1 {
	s := style.Slice(1, styleDim, 2*styleDim) // prosody half: ref_s[:, 128:]
	dEn := n.linear("bert_encoder", n.albert(ids))
	d := n.durationEncoder(dEn, s)
	df, di := n.durations(d, speed)
	return stage1{durFloat: df, dur: di, d: d, tEn: n.textEncoder(ids)}
}

// itoa formats a small non-negative index for parameter names.
func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
