package weights

import (
	"testing"

	"github.com/tensorforge/forge/weights/onnx"
	"github.com/tensorforge/forge/weights/safetensors"
)

// BenchmarkOpenKokoro measures opening the converted fp32 Kokoro (325 MB):
// manifest, mmap and header only — no tensor bytes are read or copied.
func BenchmarkOpenKokoro(b *testing.B) {
	c, err := NewCache()
	if err != nil {
		b.Fatal(err)
	}
	if !c.Ready(KokoroV1) {
		b.Skip("SKIPPING: kokoro-v1.0 not in the cache; run `make models`")
	}
	b.ReportAllocs()
	for b.Loop() {
		a, err := c.Open(KokoroV1)
		if err != nil {
			b.Fatal(err)
		}
		a.Close()
	}
}

// BenchmarkOpenKokoroSafetensors measures the safetensors layer alone on
// the converted fp32 Kokoro (325 MB, 459 tensors): mmap, header parse and
// the tensor index, no manifest and no integrity check.
func BenchmarkOpenKokoroSafetensors(b *testing.B) {
	c, err := NewCache()
	if err != nil {
		b.Fatal(err)
	}
	if !c.Ready(KokoroV1) {
		b.Skip("SKIPPING: kokoro-v1.0 not in the cache; run `make models`")
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := safetensors.Open(c.weightsPath(KokoroV1))
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkParseKokoroONNX measures mapping and parsing the 325 MB ONNX
// graph; raw tensor data stays in the mapping.
func BenchmarkParseKokoroONNX(b *testing.B) {
	c, err := NewCache()
	if err != nil {
		b.Fatal(err)
	}
	p, err := c.SourcePath(KokoroV1, "model.onnx")
	if err != nil {
		b.Skip("SKIPPING: kokoro-v1.0 not in the cache; run `make models`")
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := onnx.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

// BenchmarkDequantize measures dequantizing Whisper base's largest matrix,
// the [51865,512] token embedding.
func BenchmarkDequantize(b *testing.B) {
	c, err := NewCache()
	if err != nil {
		b.Fatal(err)
	}
	if !c.Ready(WhisperBase) {
		b.Skip("SKIPPING: whisper-base not in the cache; run `make models`")
	}
	a, err := c.Open(WhisperBase)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	q, err := a.Quantized("decoder.embed_tokens.weight")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(q.Q.Data)))
	for b.Loop() {
		q.Dequantize()
	}
}
