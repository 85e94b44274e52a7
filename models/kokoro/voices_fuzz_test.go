package kokoro

import (
	"errors"
	"math"
	"testing"
)

// FuzzVoiceSpec feeds arbitrary voice specifications to the mix parser: it
// must return a voice whose styles are finite, or a named error.
func FuzzVoiceSpec(f *testing.F) {
	for _, s := range []string{"af_a", "af_a,am_b", "af_a:2,am_b:0.5", " am_b : 1e-3 ", "af_a:", ":1", ",", "af_a:1e309", "af_a:-0", "am_b:0x1p-2", "af_a,af_a,af_a"} {
		f.Add(s)
	}
	a := make([]float32, VoiceRows*StyleSize)
	b := make([]float32, VoiceRows*StyleSize)
	for i := range a {
		a[i], b[i] = float32(i%7)-3, float32(i%5)*0.5
	}
	vs, err := NewVoicesFromTables(map[string][]float32{"af_a": a, "am_b": b})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		v, err := vs.Voice(spec)
		if err != nil {
			if !errors.Is(err, ErrBadVoiceSpec) && !errors.Is(err, ErrUnknownVoice) {
				t.Fatalf("%q: unnamed error %v", spec, err)
			}
			return
		}
		for _, n := range []int{0, 14, VoiceRows - 1} {
			for _, x := range v.Style(n) {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || x < -3 || x > 3 {
					t.Fatalf("%q: style value %v outside the voices' range", spec, x)
				}
			}
		}
	})
}
