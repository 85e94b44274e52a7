// Package vad is Silero VAD v6: a speech detector that scores 32 ms chunks
// of 16 kHz audio (16 ms at 8 kHz), and the post-processing that turns those
// scores into speech segments.
//
// The network is written by hand on package graph in the style of every
// Forge model (package models): one type per module of Silero's VADRNNJIT
// (silero.go: stft, encoderBlock for SileroVadBlock, vadDecoder for
// VADDecoderRNNJIT), each built from its param scope, whose forward methods
// mirror the ONNX export node for node: reflect padding and an STFT done as a
// strided convolution with a fixed basis, the magnitude spectrum, four
// re-parameterised convolutions with ReLU, one LSTM cell step whose h and c
// persist across chunks, and a 1×1 convolution, sigmoid and mean that give
// one speech probability per chunk. Weights come from the silero-vad-v6
// artifact, which this package registers with package weights
// (artifacts.go) and converts from the ONNX file to Silero's PyTorch names
// (convert.go); both sample-rate branches of the export are supported.
//
// The pieces:
//
//   - [Model] holds the weights and the engine. It is safe for concurrent
//     use and is shared by every stream.
//   - [Detector] scores one stream: [Detector.Prob] takes the next chunk of
//     [Detector.ChunkSize] samples, carries the 64-sample context (32 at
//     8 kHz) and the LSTM state to the next call, and allocates nothing in
//     steady state. It belongs to one goroutine; a service makes one per
//     connection (cheap: compiled programs are recycled through the model).
//   - [Segmenter] is Silero's get_speech_timestamps post-processing in
//     streaming form (probabilities in, segments out as soon as they are
//     final); [Segments] is the same over a whole array.
//   - [Processor] ([Model.NewProcessor], [Model.NewStage]) wires detector
//     and segmenter as a pipeline stage: PCM frames in, [Speech] (segment
//     plus its audio) out, each as soon as it is final; an open segment is
//     flushed at the end of the stream.
//   - [Model.Probs] and [Model.Detect] do the same for a whole clip.
//   - On a CPU engine with AVX-512, detectors and batches skip the compiled
//     program and run fast.go: the same network as a fixed sequence of
//     panel products (kernels/cpu/gemm) on buffers laid out once per
//     stream, within 1e-5 of the program's probabilities (fast_test.go);
//     [Model.Path] says which runs.
//
// Typical use:
//
//	m, err := vad.Open(ctx, graph.NewEngine(cpu.New())) // weights from the model cache
//	d, err := m.NewDetector(ctx, vad.Rate16k)
//	defer d.Close()
//	p, err := d.Prob(ctx, chunk) // 512 samples → speech probability
//
// Bad input is an error wrapping one of the Err* values: a rate without a
// branch (ErrSampleRate), several channels (ErrNotMono, from CheckFormat),
// no samples (ErrEmptyAudio), a chunk of the wrong length (ErrChunkSize),
// NaN or infinite samples (ErrNotFinite).
package vad
