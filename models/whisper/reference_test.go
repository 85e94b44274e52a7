package whisper_test

import (
	"fmt"
	"github.com/tensorforge/forge/internal/signalcmp"
	"math"
	"sync"
	"testing"

	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/weights"
)

// TestF32EncoderMatchesFloat64 checks the f32 encoder against a plain
// float64 transcription of the reference module (loops, no graph) on the
// golden jfk features: the f32 mode's distance to the int8 golden (rel L2
// ≈ 0.37 for tiny) is the int8 graph's quantization error, not ours. About
// half a minute on two cores; skipped with -short.
func TestF32EncoderMatchesFloat64(t *testing.T) {
	if testing.Short() {
		t.Skip("a float64 encoder in plain loops takes about 30 s")
	}
	m := model(t, "tiny", whisper.F32)
	a, err := weights.Open(weights.WhisperTiny)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	f := goldenFile(t, "tiny", "jfk")
	feats, _ := goldenF32(t, f, "input_features")
	ref := float64Encoder(t, a, m.Config(), feats)
	got, err := m.EncoderOutput(bg, feats)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := goldenF32(t, f, "encoder_last_hidden_state")
	mean, low := frameCosine(got, ref, m.Config().DModel)
	t.Logf("f32 encoder vs float64 reference: rel L2 %.2e, max abs %.2e, frame cosine mean %.7f min %.7f", signalcmp.RelL2(got, ref), signalcmp.MaxAbs(got, ref), mean, low)
	t.Logf("onnxruntime int8 golden vs float64 reference: rel L2 %.4f (the int8 graph's own error)", signalcmp.RelL2(want, ref))
	if rel := signalcmp.RelL2(got, ref); rel > 1e-4 {
		t.Errorf("rel L2 %.3e > 1e-4", rel)
	}
}

// float64Encoder is Whisper's AudioEncoder in float64 with the dequantized
// weights, written as loops.
func float64Encoder(t *testing.T, a *weights.Artifact, c whisper.Config, feats []float32) []float32 {
	t.Helper()
	get := func(name string, quantized bool) []float64 {
		var w []float32
		var err error
		if quantized {
			w, _, err = a.Dequantize(name)
		} else {
			w, _, err = a.Float32s(name)
		}
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(w))
		for i, v := range w {
			out[i] = float64(v)
		}
		return out
	}
	d, heads, frames := c.DModel, c.EncoderHeads, c.Frames()
	dh := d / heads
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	parallel := func(n int, body func(i int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); body(i) }()
		}
		wg.Wait()
	}
	// conv is Conv1d(k=3, padding 1) then GELU on x [cin, lin].
	conv := func(x []float64, cin, lin int, w, b []float64, stride int) ([]float64, int) {
		lout := (lin-1)/stride + 1
		y := make([]float64, d*lout)
		parallel(d, func(o int) {
			for ti := range lout {
				s := b[o]
				for ci := range cin {
					for k := range 3 {
						if i := ti*stride + k - 1; i >= 0 && i < lin {
							s += w[(o*cin+ci)*3+k] * x[ci*lin+i]
						}
					}
				}
				y[o*lout+ti] = gelu(s)
			}
		})
		return y, lout
	}
	norm := func(x, w, b []float64) []float64 {
		y := make([]float64, len(x))
		for r := range len(x) / d {
			row := x[r*d : (r+1)*d]
			var mean, v float64
			for _, e := range row {
				mean += e
			}
			mean /= float64(d)
			for _, e := range row {
				v += (e - mean) * (e - mean)
			}
			v /= float64(d)
			for i, e := range row {
				y[r*d+i] = (e-mean)/math.Sqrt(v+1e-5)*w[i] + b[i]
			}
		}
		return y
	}
	linear := func(x, w, b []float64, out, in int) []float64 {
		rows := len(x) / in
		y := make([]float64, rows*out)
		parallel(rows, func(r int) {
			for o := range out {
				s := 0.0
				if b != nil {
					s = b[o]
				}
				for i := range in {
					s += x[r*in+i] * w[o*in+i]
				}
				y[r*out+o] = s
			}
		})
		return y
	}
	x0 := make([]float64, len(feats))
	for i, v := range feats {
		x0[i] = float64(v)
	}
	h, n := conv(x0, c.NMels, frames, get("encoder.conv1.weight", true), get("encoder.conv1.bias", false), 1)
	h, n = conv(h, d, n, get("encoder.conv2.weight", true), get("encoder.conv2.bias", false), 2)
	pos := get("encoder.embed_positions.weight", false)
	x := make([]float64, n*d)
	for s := range n {
		for ch := range d {
			x[s*d+ch] = h[ch*n+s] + pos[s*d+ch]
		}
	}
	for l := range c.EncoderLayers {
		p := fmt.Sprintf("encoder.layers.%d.", l)
		hn := norm(x, get(p+"self_attn_layer_norm.weight", false), get(p+"self_attn_layer_norm.bias", false))
		q := linear(hn, get(p+"self_attn.q_proj.weight", true), get(p+"self_attn.q_proj.bias", false), d, d)
		k := linear(hn, get(p+"self_attn.k_proj.weight", true), nil, d, d)
		v := linear(hn, get(p+"self_attn.v_proj.weight", true), get(p+"self_attn.v_proj.bias", false), d, d)
		o := make([]float64, n*d)
		parallel(heads*n, func(t int) {
			hh, i := t/n, t%n
			scores := make([]float64, n)
			top := math.Inf(-1)
			for j := range n {
				s := 0.0
				for ch := range dh {
					s += q[i*d+hh*dh+ch] * k[j*d+hh*dh+ch]
				}
				scores[j] = s / math.Sqrt(float64(dh))
				top = math.Max(top, scores[j])
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - top)
				sum += scores[j]
			}
			for ch := range dh {
				s := 0.0
				for j := range n {
					s += scores[j] * v[j*d+hh*dh+ch]
				}
				o[i*d+hh*dh+ch] = s / sum
			}
		})
		att := linear(o, get(p+"self_attn.out_proj.weight", true), get(p+"self_attn.out_proj.bias", false), d, d)
		for i := range x {
			x[i] += att[i]
		}
		hn = norm(x, get(p+"final_layer_norm.weight", false), get(p+"final_layer_norm.bias", false))
		f1 := linear(hn, get(p+"fc1.weight", true), get(p+"fc1.bias", false), c.EncoderFFN, d)
		for i := range f1 {
			f1[i] = gelu(f1[i])
		}
		f2 := linear(f1, get(p+"fc2.weight", true), get(p+"fc2.bias", false), d, c.EncoderFFN)
		for i := range x {
			x[i] += f2[i]
		}
	}
	x = norm(x, get("encoder.layer_norm.weight", false), get("encoder.layer_norm.bias", false))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
