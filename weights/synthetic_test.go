package weights

import (
	"math"
	"slices"
	"testing"

	"github.com/tensorforge/forge/weights/safetensors"
)

// TestSynthetic: a synthetic artifact has exactly the manifest's tensors,
// finite values of sensible spread, the same values for the same seed and
// different ones for another.
func TestSynthetic(t *testing.T) {
	man := Manifest{ID: "m", Shapes: map[string]TensorInfo{
		"fc.weight":            {DType: safetensors.F32, Shape: []int{64, 256}},
		"fc.bias":              {DType: safetensors.F32, Shape: []int{64}},
		"ln.weight":            {DType: safetensors.F32, Shape: []int{64}},
		"q.weight":             {DType: safetensors.U8, Shape: []int{32, 128}},
		"q.weight_scale":       {DType: safetensors.F32, Shape: []int{1}},
		"q.weight_zero_point":  {DType: safetensors.U8, Shape: []int{1}},
		"s.weight":             {DType: safetensors.I8, Shape: []int{8, 8}},
		"s.weight_zero_point":  {DType: safetensors.I8, Shape: []int{1}},
		"stft.window_sum":      {DType: safetensors.F32, Shape: []int{100}},
		"generator.alpha1.0":   {DType: safetensors.F32, Shape: []int{1, 16, 1}},
		"conv.weight":          {DType: safetensors.F32, Shape: []int{8, 4, 3}},
		"token_embedding.data": {DType: safetensors.F32, Shape: []int{10, 4}},
	}}
	a, err := Synthetic(man, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(man, 7)
	c, _ := Synthetic(man, 8)
	if got, want := a.Names(), []string{"conv.weight", "fc.bias", "fc.weight", "generator.alpha1.0", "ln.weight", "q.weight", "q.weight_scale", "q.weight_zero_point", "s.weight", "s.weight_zero_point", "stft.window_sum", "token_embedding.data"}; !slices.Equal(got, want) {
		t.Fatalf("names %v", got)
	}
	for name, info := range man.Shapes {
		ta, _ := a.Tensor(name)
		tb, _ := b.Tensor(name)
		if ta.DType != info.DType || !slices.Equal(ta.Shape, info.Shape) {
			t.Errorf("%s: %s%v, want %s%v", name, ta.DType, ta.Shape, info.DType, info.Shape)
		}
		if !slices.Equal(ta.Data, tb.Data) {
			t.Errorf("%s differs between two draws with one seed", name)
		}
	}
	fw, _, _ := a.Float32s("fc.weight")
	fc, _, _ := c.Float32s("fc.weight")
	if slices.Equal(fw, fc) {
		t.Error("seeds 7 and 8 drew the same matrix")
	}
	var ss float64
	for _, v := range fw {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite weight")
		}
		ss += float64(v) * float64(v)
	}
	if std := math.Sqrt(ss / float64(len(fw))); math.Abs(std-1/16.0) > 0.01 {
		t.Errorf("fc.weight spread %.4f, want about 1/√256", std)
	}
	for _, n := range []string{"ln.weight", "stft.window_sum", "generator.alpha1.0"} {
		v, _, _ := a.Float32s(n)
		for _, x := range v {
			if x < 1 || x > 2 {
				t.Fatalf("%s holds %g, want a positive gain near 1", n, x)
			}
		}
	}
	if zp, _ := a.Tensor("q.weight_zero_point"); zp.Data[0] != 128 {
		t.Errorf("u8 zero point %d, want 128", zp.Data[0])
	}
}
