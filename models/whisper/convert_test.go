package whisper

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/onnx"
)

// TestWhisperDequantizeExact checks, for every quantized weight of
// whisper-tiny, that Dequantize reproduces (q − zp)·scale computed straight
// from the ONNX initializers, element for element — which also checks the
// [in,out] → [out,in] transposition of the MatMul weights.
func TestWhisperDequantizeExact(t *testing.T) {
	a, err := weights.Open(weights.WhisperTiny)
	if errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIPPED: %s is not in the model cache: run `go run ./cmd/models fetch %s`", weights.WhisperTiny, weights.WhisperTiny)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	checked := 0
	for _, part := range []struct{ file, prefix string }{
		{"encoder_model_quantized.onnx", "encoder."},
		{"decoder_model_merged_quantized.onnx", "decoder."},
	} {
		p, err := a.Path(part.file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := onnx.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ix := onnx.NewIndex(m.Graph)
		for _, name := range ix.Order {
			base, ok := strings.CutSuffix(name, "_quantized")
			if !ok {
				continue
			}
			q, scale, zp := ix.Consts[name], ix.Consts[base+"_scale"], ix.Consts[base+"_zero_point"]
			pt := whisperName(base, part.prefix)
			mm := ix.UsesBy(name, "MatMulInteger")
			if len(mm) > 0 && onnx.Anonymous(base) {
				pt = whisperName(onnx.Scope(mm[0].Node.Name), part.prefix) + ".weight"
			}
			got, shape, err := a.Dequantize(pt)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := scale.Float32s()
			z := int32(zp.Raw[0])
			if zp.DataType == onnx.Int8 {
				z = int32(int8(zp.Raw[0]))
			}
			val := func(b byte) int32 {
				if q.DataType == onnx.Int8 {
					return int32(int8(b))
				}
				return int32(b)
			}
			if len(mm) > 0 {
				in, out := int(q.Dims[0]), int(q.Dims[1])
				if !slices.Equal(shape, []int{out, in}) {
					t.Fatalf("%s: shape %v, want [%d %d]", pt, shape, out, in)
				}
				for i := 0; i < in; i++ {
					for o := 0; o < out; o++ {
						want := float32(val(q.Raw[i*out+o])-z) * s[0]
						if g := got[o*in+i]; g != want {
							t.Fatalf("%s[%d,%d] = %v, want %v", pt, o, i, g, want)
						}
					}
				}
			} else {
				for i, b := range q.Raw {
					if want := float32(val(b)-z) * s[0]; got[i] != want {
						t.Fatalf("%s[%d] = %v, want %v", pt, i, got[i], want)
					}
				}
			}
			checked++
		}
	}
	if checked != 67 {
		t.Errorf("checked %d quantized weights, want 67", checked)
	}
}
