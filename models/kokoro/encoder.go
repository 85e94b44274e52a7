package kokoro

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
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

// albert is CustomAlbert (transformers' AlbertModel, last hidden state):
// embeddings, a 128→768 projection (encoder.embedding_hidden_mapping_in),
// then one transformer layer whose weights are shared by all twelve
// applications. The attention mask is all ones for a single unpadded
// sequence, so it is left out.
type albert struct {
	word, tokenType, position param.Tensor // embeddings.*_embeddings.weight
	embLN                     layerNorm    // embeddings.LayerNorm
	mapping                   linear       // encoder.embedding_hidden_mapping_in
	layer                     albertLayer  // encoder.albert_layer_groups.0.albert_layers.0
}

func newAlbert(s *param.Scope) albert {
	emb, enc := s.Sub("embeddings"), s.Sub("encoder")
	return albert{
		word:      emb.F32("word_embeddings.weight", -1, -1),
		tokenType: emb.F32("token_type_embeddings.weight", -1, -1),
		position:  emb.F32("position_embeddings.weight", maxPosition, -1),
		embLN:     newLayerNorm(emb.Sub("LayerNorm"), "weight", "bias", 1e-12),
		mapping:   newLinear(enc.Sub("embedding_hidden_mapping_in")),
		layer:     newAlbertLayer(enc.Sub("albert_layer_groups.0.albert_layers.0")),
	}
}

// forward maps ids [1, T] to the last hidden state [1, T, 768].
func (m *albert) forward(ids graph.Tensor) graph.Tensor {
	g := ids.Graph()
	T := ids.Dim(1)
	word := m.word.In(g).Gather(0, ids)           // [1, T, 128]
	tokenType := m.tokenType.In(g).Slice(0, 0, 1) // type 0 for every token
	position := m.position.In(g).Slice(0, 0, T)   // positions 0..T-1
	x := m.embLN.forward(word.Add(tokenType).Add(position))
	h := m.mapping.forward(x) // [1, T, 768]
	for range albertLayers {
		h = m.layer.forward(h)
	}
	return h
}

// albertLayer is AlbertLayer: self-attention and a GELU (tanh) feed-forward
// block, each followed by a residual LayerNorm.
type albertLayer struct {
	query, key, value, dense linear    // attention.*
	attnLN                   layerNorm // attention.LayerNorm
	ffn, ffnOutput           linear
	fullLN                   layerNorm // full_layer_layer_norm
}

func newAlbertLayer(s *param.Scope) albertLayer {
	att := s.Sub("attention")
	return albertLayer{
		query: newLinear(att.Sub("query")), key: newLinear(att.Sub("key")),
		value: newLinear(att.Sub("value")), dense: newLinear(att.Sub("dense")),
		attnLN:    newLayerNorm(att.Sub("LayerNorm"), "weight", "bias", 1e-12),
		ffn:       newLinear(s.Sub("ffn")),
		ffnOutput: newLinear(s.Sub("ffn_output")),
		fullLN:    newLayerNorm(s.Sub("full_layer_layer_norm"), "weight", "bias", 1e-12),
	}
}

func (m *albertLayer) forward(h graph.Tensor) graph.Tensor {
	ctx := m.selfAttention(h) // [1, T, 768]
	a := m.attnLN.forward(h.Add(m.dense.forward(ctx)))
	f := m.ffnOutput.forward(m.ffn.forward(a).GeluTanh())
	return m.fullLN.forward(f.Add(a))
}

// textEncoder is TextEncoder: embedding, three blocks of Conv1d(k=5) →
// LayerNorm over channels → LeakyReLU(0.2), then a bidirectional LSTM.
type textEncoder struct {
	embedding param.Tensor
	cnn       [3]struct {
		conv conv1d    // cnn.i.0
		norm layerNorm // cnn.i.1 (gamma, beta)
	}
	lstm lstm
}

func newTextEncoder(s *param.Scope) textEncoder {
	t := textEncoder{embedding: s.F32("embedding.weight", -1, hiddenDim), lstm: newLSTM(s.Sub("lstm"))}
	for i := range t.cnn {
		blk := s.Sub("cnn").Index(i)
		t.cnn[i].conv = newConv1d(blk.Index(0), true, graph.ConvOpts{Padding: 2}, false)
		t.cnn[i].norm = newLayerNorm(blk.Index(1), "gamma", "beta", 1e-5)
	}
	return t
}

// forward maps ids [1, T] to t_en [1, 512, T].
func (m *textEncoder) forward(ids graph.Tensor) graph.Tensor {
	x := m.embedding.In(ids.Graph()).Gather(0, ids).Transpose(1, 2) // [1, 512, T]
	for i := range m.cnn {
		x = m.cnn[i].conv.forward(x)
		x = m.cnn[i].norm.forward(x.Transpose(1, 2)).Transpose(1, 2)
		x = x.LeakyRelu(0.2)
	}
	return m.lstm.forward(x.Transpose(1, 2)).Transpose(1, 2)
}
