package whisper

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// arith is how one graph computes the layers whose arithmetic depends on
// the precision and on the graph's shape: the only place where Whisper's
// variants differ. The modules (encoder.go, decoder.go, attention.go) call
// it and never test the precision themselves; Model picks one per graph
// below:
//
//   - f32 (f32.go): dequantized weights, float32 activations, fused
//     kernels; with a few rows (rowwise: the decoder steps), and on the
//     CPU with any number, the products read the 8-bit weights as bytes
//     (LinearQ; the CPU packs them for the encoder's products as it
//     multiplies, and runs its MLPs in blocks of rows); with many rows
//     elsewhere (a GPU's encoder) the attention's three projections and
//     the cross-attention keys and values of every layer run as one
//     product each on the folded float32 weights.
//   - bf16 (bf16.go): f32 with the products of many rows (the encoder's
//     linear layers and convolutions, the cross-attention keys and
//     values) rounded to bfloat16 where the backend has bfloat16 units,
//     and the decoder steps' byte-weight products (layers and logits) on
//     rows rounded to 16-bit fixed point where it has 8-bit dot-product
//     units.
//   - int8 (int8.go): the export's own arithmetic, node for node, the mode
//     that reproduces the onnxruntime goldens; per-hypothesis activation
//     quantization in a batch of beams (groups).
type arith interface {
	// linear applies l to x [..., in], giving [..., out].
	linear(x graph.Tensor, l *linear) graph.Tensor
	// conv applies c to x [B, in, L] with the given stride.
	conv(x graph.Tensor, c *conv, stride int) graph.Tensor
	// layerNorm normalises the last axis of x.
	layerNorm(x graph.Tensor, n *layerNorm) graph.Tensor
	// gelu is the erf GELU.
	gelu(x graph.Tensor) graph.Tensor
	// qkv returns the attention's query (scaled by scale after the bias,
	// as the export does), key and value projections of x.
	qkv(x graph.Tensor, a *attention, scale float64) (q, k, v graph.Tensor)
	// crossKV projects the encoder output h to the keys and values of
	// every cross-attention in cross and calls use with each layer's, in
	// order. Where they are separate products, each layer's are made right
	// before its use, so that a program that stores them in states it does
	// not read (a window's) holds one layer's at a time instead of every
	// layer's (graph runs such a store as soon as its value is ready): 2·L
	// products of S×d floats, 37 MB for base's 30-s silence tail.
	crossKV(h graph.Tensor, cross []*attention, use func(layer int, k, v graph.Tensor))
	// mlpRows is the most rows of an MLP's input it computes at once (0:
	// all of them): its hidden layer, 4·d wide, held twice (fc1's output
	// and its GELU), is the largest value of an encoder pass.
	mlpRows() int
	// logits projects states x [rows, d] on the token embedding e
	// [vocab, d] (proj_out is tied to embed_tokens), reading e as bytes.
	logits(x graph.Tensor, e *param.Quantized) graph.Tensor
}

// encoderArith is the arithmetic of graphs with many rows per product: the
// encoder and the cross-attention projections of its output.
func (m *Model) encoderArith(g *graph.Graph) arith {
	switch m.prec {
	case Int8:
		return int8Arith{g: g, groups: 1}
	case BF16:
		return bf16Arith(g)
	}
	return f32Arith{g: g, bytes: m.packsBytes()}
}

// packsBytes reports whether the engine's backend runs a product of many
// rows by a byte weight (LinearQ) as fast as one by its float32 copy,
// packing the weight as it multiplies: the CPU does (gemm.SGEMMQ8); a GPU
// backend's LinearQ is a kernel for a few rows, so there the encoder keeps
// the folded float32 weights.
func (m *Model) packsBytes() bool { return m.eng.Backend().Name() == "cpu" }

// batchesSteps reports whether TranscribeMany runs its recordings'
// decoder steps as a Batch: not on the CPU, where, measured on the 2-core
// EPYC (quiet), a batched round of 4 sequences took 11.2 ms and 4 windows
// stepping side by side on the cores 7.4 ms (8: 18.5 and 16.4 ms) — its
// byte-weight products dequantize the weight again for every row.
func (m *Model) batchesSteps() bool { return m.eng.Backend().Name() != "cpu" }

// keepsEncoder reports whether Encode runs a compiled encoder program
// that its session keeps (see session.encoder) rather than building the
// graph and looking up its compilation each window. On an H100 that took
// ~0.5 ms of host time before Whisper tiny's encoder, itself ~0.64 ms of
// kernels; on the CPU it is a small part of a window's ~0.1 s, and a kept
// program would hold its activations' memory between windows.
func (m *Model) keepsEncoder() bool { return m.eng.Backend().Name() != "cpu" }

// stepArith is the arithmetic of decoder programs on beams hypotheses: a
// few rows per product, where streaming the weights dominates.
func (m *Model) stepArith(g *graph.Graph, beams int) arith {
	switch m.prec {
	case Int8:
		return int8Arith{g: g, groups: beams}
	case BF16:
		return bf16StepArith(g)
	}
	return f32Arith{g: g, rowwise: true}
}

// separateQKV is qkv as three products, the way the export computes it.
func separateQKV(a arith, x graph.Tensor, at *attention, scale float64) (q, k, v graph.Tensor) {
	return a.linear(x, &at.q).MulScalar(scale), a.linear(x, &at.k), a.linear(x, &at.v)
}
