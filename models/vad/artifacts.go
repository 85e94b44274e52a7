package vad

import (
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// npmVadWeb ships Silero VAD's ONNX files (../shared/models/MODELS.md).
var npmVadWeb = fetch.Package{Name: "@ricky0123/vad-web", Version: "0.0.31", Size: 5471324,
	Integrity: "sha512-ePVq8TvB21sdHSxVMZOEIf9JVa7MAYpaIaNXeGgsPOiMCN8xbPCdF2LS5aYj7VRR3ZxzutedgV9ZplV65IA1Fg=="}

// init registers the model's artifact: where its ONNX file ships, what it
// hashes to, and the conversion to Silero's PyTorch names (convert.go).
func init() {
	weights.Register(weights.Model{
		ID:          weights.SileroVADv6,
		Description: "Silero VAD v6 (16 kHz and 8 kHz branches), ONNX",
		Files: []weights.File{weights.Whole("silero_vad.onnx", npmVadWeb, "package/dist/silero_vad_v6.onnx",
			"1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3", 2327524,
			weights.Upstream{Repo: "snakers4/silero-vad", Path: "src/silero_vad/data/silero_vad.onnx"})},
		Convert: convert,
	})
}
