// Package kokoro is Kokoro-82M v1.0 text-to-speech written as Go on the
// graph engine: phoneme ids and a style vector in, 24 kHz audio out.
//
// Typical use (cmd/say wires the same steps into a pipeline):
//
//	w, err := kokoro.LoadWeights(ctx, false)          // fetch + convert on first use; true: int8 artifact
//	m, err := kokoro.New(graph.NewEngine(cpu.New()), w)
//	voices, err := kokoro.LoadVoices(ctx)
//	voice, err := voices.Voice("af_heart")            // or a mix: "af_heart,am_michael:0.5"
//	front, err := g2p.NewEspeak(g2p.AmericanEnglish)  // the front-end sub-package
//	chunks := (&g2p.Chunker{G2P: front}).ChunkString(ctx, text)
//	for s, err := range m.Speak(ctx, chunks, voice, 1, kokoro.DefaultFirstTokens) {
//		// s.Samples: a sentence, or a stretch of one (the first words first), at 24 kHz
//	}
//
// [Model.Synthesize] is the bare model: the ids of one chunk (0-padded, at
// most [MaxPhonemes] between the pads), the voice's style row for that many
// phonemes ([Voice.Style]) and the speed. [Model.Forward] also returns the
// intermediates the parity tests compare.
//
// The modules mirror hexgrad/kokoro (model.py, modules.py, istftnet.py)
// and, where the two differ, the onnx-community ONNX export that the golden
// outputs come from (../shared/golden/kokoro), in the style of every Forge
// model (package models): one Go type per module (kmodel.go is KModel;
// encoder.go ALBERT and TextEncoder, with ALBERT's self-attention as one
// product and the fused attention in albert_attention.go; prosody.go
// ProsodyPredictor and its blocks; decoder.go Decoder and the iSTFTNet
// Generator; layers.go the PyTorch layers), each built from its param
// scope at New, which checks
// every weight, and computed by a forward method. The artifacts (fp32,
// int8, voices) are registered with package weights by artifacts.go and
// converted to KModel's names by convert.go, convert_int8.go and
// convert_voices.go. One utterance runs as three
// graphs with the host in between, because two sizes are data: the number
// of audio frames (the sum of the predicted durations) and the harmonic
// source (a running phase over the upsampled F0):
//
//  1. text: ALBERT → bert_encoder → duration encoder → durations (sigmoid
//     sum / speed, rounded half to even, at least one frame); beside it,
//     as a graph of its own on another goroutine, the text encoder;
//  2. prosody: the features repeated by the durations (the alignment
//     matrix product of the reference), the shared LSTM, the F0 and energy
//     (N) predictors;
//  3. host: the harmonic source (SineGen as exported: no noise, phase
//     increments averaged down to the F0 rate, accumulated, interpolated
//     back up) and its STFT, reproduced to the last bit of the export's
//     onnxruntime arithmetic because the generator reads the phase of
//     near-silent bins (on a device, which cannot reproduce it, the same
//     as graph ops in the generator's program, generator.harmonic, in
//     arithmetic that another summation order barely moves); then
//     the decoder and the iSTFTNet generator, ending
//     in the export's inverse STFT (a transposed convolution with the
//     windowed inverse-DFT basis, n_fft 20, hop 5). The decoder's features
//     and the generator's harmonic sources (the source spectrogram through
//     noise_convs and noise_res) run as two graphs side by side, the
//     generator as a third.
//
// The graphs run side by side share no data, so the results are those of
// one graph; they fill the core that the other's serial steps (norms,
// narrow products, the tails of parallel ones) leave idle on a 2-core
// machine.
//
// The int8 artifact (onnx-community model_quantized.onnx) is supported by
// dequantizing its weights at load; it runs at fp32 speed.
//
// # Speed
//
// Graph 3 holds almost all the arithmetic (about 50 GFLOP per second of
// audio, in convolutions of 128 and 256 channels at 4800 and 800 frames per
// second). Its convolutions run as implicit GEMMs (kernels/cpu/gemm), and
// on CPUs with a bfloat16 unit in bfloat16 with float32 sums
// ([graph.ConvOpts] BF16): AMX-BF16 tiles, five to eight times the float32
// throughput, or AVX512_BF16's VDPBF16PS where there is no AMX on AMD's
// Zen 4 and 5, about twice. Intel's cores issue VDPBF16PS at half the
// FMAs' rate, so without AMX they run float32 by Winograd's minimal
// filtering instead ([graph.ConvOpts] Winograd: 2.25–3.1 times fewer
// products for 3 to 11 taps). The golden waveform figures stay within 0.003
// (rel L2) and 0.002 (Pearson) of the float32 ones. So do graph 2's energy
// convolutions; graph 1 and the F0 branch stay float32: the predicted F0
// drives the harmonic source's phase, and durations must match the
// reference exactly.
// [Model.Float32] runs everything in float32. [Model.Warm] pays the first-use
// costs (weights packed for the GEMMs, folding) before the first request.
//
// Measured with cmd/say on the 30-word benchmark paragraph (11.8 s of
// audio), 2 cores of a Sapphire Rapids VM with other work running: RTF
// 0.17–0.20 and 250–300 ms to first audio by default (fp32 or int8
// artifact); RTF 0.37–0.39 and about 600 ms with Float32.
//
// # Memory
//
// The fp32 artifact is mapped, not copied (load takes about 10 ms). The
// CPU backend keeps its own packs of the weights it multiplies (bfloat16
// for the decoder and generator, 100 MB; float32 for the rest, 80 MB)
// and gives back the mapped pages it packed from (internal/filepages); the
// pages the kernels read in place (LSTM recurrences, the AdaIN style
// projections, some 40 MB) are given back before each generator run, as
// that run's working memory, about 20 MB a second of audio in a chunk,
// makes the peak. A convolution's pack read in place from the CPU
// backend's pack file is given back once the convolution has run. cmd/say
// on the 30-word benchmark paragraph peaked at about 470 MiB with the
// bfloat16 packs before that (reports/2026-11-24-kokoro-memory.md), and
// peaked at 361–371 MiB with float32 ones since (Intel, no AMX:
// reports/2026-12-07-bf16-intel.md), and at 396–405 MiB with the larger
// Winograd ones (reports/2026-12-07-winograd.md).
//
// Text comes in through the front-end sub-packages: g2p (normalisation,
// espeak-ng phonemes, sentence chunking), vocab (phonemes → ids) and
// espeak (the espeak-ng binding).
package kokoro
