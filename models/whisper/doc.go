// Package whisper is OpenAI's Whisper speech recognizer (tiny and base,
// multilingual) as hand-written Go on the graph engine: the audio encoder,
// the text decoder with its key/value caches, and the glue that lets the
// decode package search over its logits.
//
// The weights are the int8 artifacts of the weights package (Xenova's ONNX
// export, converted to PyTorch names). One model code runs them in three
// precisions:
//
//   - F32 (the default) runs float32 activations throughout on the
//     weights dequantized exactly ((q − zero)·scale in float32). On the
//     CPU no float32 copy of a linear layer's weight is kept: every
//     product reads its weight as bytes (LinearQ); one of many rows (the
//     encoder's) packs its weight panels from the bytes as it multiplies,
//     the same values the GEMM on a dequantized copy would read, so the
//     same sums (gemm.SGEMMQ8). The two convolutions' weights (2 % of the
//     model), and on a GPU every weight, are dequantized once, when the
//     first program is compiled (a weight-only subgraph the engine folds
//     and caches).
//   - Int8 runs the export's own arithmetic, node for node: each quantized
//     matrix product quantizes its activation per tensor
//     (DynamicQuantizeLinear), multiplies in integers (MatMulInteger,
//     ConvInteger), casts the int32 result to float, scales it by
//     scale_x·scale_w and adds the bias. This is the mode that reproduces
//     the onnxruntime goldens in ../shared/golden/whisper-*.
//   - BF16 is F32 with the encoder's products and convolutions (and the
//     cross-attention keys and values) in bfloat16, float32 sums, on the
//     CPU's bfloat16 units (AMX tiles, or AVX512_BF16 on AMD Zen 4 and 5),
//     and the decoder steps' byte-weight products (layers and logits) on
//     rows rounded to 16-bit fixed point, summed exactly in integers on
//     its 8-bit dot-product unit (AVX512_VNNI); where the backend has
//     neither it computes as F32. On the goldens it decodes the same
//     tokens as F32 (TestBF16Accuracy).
//
// The network, as the reference modules write it:
//
//	encoder: mel [80, 3000] → conv1 (k3) → GELU → conv2 (k3, stride 2) → GELU
//	         → + positions [1500, d] → L × pre-LN block (self-attention, MLP)
//	         → LayerNorm → hidden [1500, d]
//	decoder: tokens → embedding + learned positions → L × pre-LN block
//	         (masked self-attention, cross-attention on hidden, MLP)
//	         → LayerNorm → logits = x · embeddingᵀ (tied)
//
// A window's encoder runs on the frames that hold audio, half a second
// more and rounded up to a whole second (RealLength, the default): 1 s of
// speech no longer costs as much as 30 s. The decoder attends over those
// positions followed by a fixed encoding of silence up to 1500 positions
// (the model's silence tail, encoded once and kept beside the weights for
// later processes: tailcache.go), as Whisper, trained on 30-s windows
// only, loops without it; a window whose result still fails the transcribe
// thresholds is decoded again padded (decode.PaddedAudio). FullWindow
// (WithEncodeLength) encodes every window as 30 s, as the onnxruntime
// goldens were made.
//
// Decoding state lives in graph.State buffers owned by a Window: the
// cross-attention keys and values of each layer, computed once when the
// window is encoded and stored per head transposed ([heads, dh, 1500], so a
// step reads rows of 1500 floats), and one self-attention key/value cache
// per layer and hypothesis, [beams, 448, d], to which each decoder step
// appends its position (past positions are never recomputed). Reorder
// permutes the hypotheses' caches for beam search. Windows' state is pooled
// by the model: compiled programs are keyed by the state they touch, so a
// reused state finds its programs compiled (one per position and batch
// size, compiled on first use).
//
// A Batch decodes many windows' greedy steps as one program per token
// (TranscribeMany uses one for 16 recordings or more on a GPU): each
// sequence sits in a slot of the batch's own caches at its own length
// (positions, causal masks and cache writes per row), the rounds run over
// the first slots in use, sequences move down as others end, and a batch
// too small to pay dissolves into its windows' own decoders.
//
// Where the memory goes (F32 on the CPU, listen on jfk): the weights file,
// mapped (tiny 40 MB, base 76 MB); the cross-attention keys and values of
// a window and of the silence tail, 1500 positions each (tiny 18 MB each,
// base 37 MB), and the self-attention caches (tiny 5.5 MB, base 11 MB per
// hypothesis); the buffers of the largest encoder pass, the silence
// tail's (tiny 13 MB, base 17 MB: its MLPs run in blocks of 750 rows),
// which the windows' programs then reuse; the rest is the tokenizer, the
// log-mel and the GEMM's packing buffers. Peak RSS on jfk, whole listen
// process: tiny 140 MiB, base 216 MiB (whisper.cpp, f16 weights: 148 and
// 238; reports/2026-11-24-whisper-memory.md).
//
// Where the time goes: the encoder is a few large matrix products and
// attention (graph's fused Attention kernel: heads read in place, scores
// kept in cache); a decoder step is memory-bound, so in F32 its projections
// and the tied logits read the int8 weights as bytes and dequantize on the
// fly (graph's LinearQ) instead of reading four times the bytes of a
// float32 copy.
//
// # Code layout
//
// The code is written in the style every Forge model shares (package
// models): one Go type per module of Hugging Face's WhisperModel, each
// built from its param.Scope and computed by a forward method —
// encoder.go (WhisperEncoder, WhisperEncoderLayer), decoder.go
// (WhisperDecoder, WhisperDecoderLayer, the tied output projection),
// attention.go (WhisperAttention: the encoder's self-attention, the
// decoder's cached self-attention and its cross-attention) and layers.go
// (Linear, Conv1d, LayerNorm as the artifact stores them). The modules
// never test the precision: arith.go picks, once per graph, the arithmetic
// of f32.go (dequantized weights, fused QKV and cross-K/V products for the
// encoder, row-wise LinearQ for decoder steps), bf16.go (f32's with the
// many-row products in bfloat16 and the steps' rows on a 16-bit grid) or
// int8.go (the export's arithmetic). session.go holds a window's decoding
// state (cross-attention keys and values, self-attention caches, the
// compiled step programs) and its pooling; window.go is the decode.Decoder
// over it; batch.go the Batch, the same decoder.forward over slots. The
// decoder step a GPU backend captures is Window.program: decoder.forward
// on stepArith.
//
// Typical use:
//
//	eng := graph.NewEngine(cpu.New())
//	m, err := whisper.Open(ctx, eng, "tiny", whisper.F32) // fetches on first use
//	defer m.Close()
//	tr, err := m.Transcribe(ctx, samples16k, decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer())))
//
// Lower level, as the listen pipeline does: NewAudio computes the log-mel
// of a recording and implements decode.PaddedAudio; its Encode runs the
// encoder on one window and returns that Window, which implements
// decode.Decoder. Model.Encode and Model.Attach make a Window from
// features or from a given encoder output (the parity tests use both).
package whisper
