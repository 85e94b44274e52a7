package mel

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/internal/refdata"
)

func TestFiltersMatchWhisperNPZ(t *testing.T) {
	npz, err := refdata.ReadNPZ(refdata.SharedFile(t, "data/mel_filters.npz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, nMels := range []int{80, 128} {
		want, ok := npz["mel_"+itoa(nMels)]
		if !ok {
			t.Fatalf("mel_filters.npz has no mel_%d", nMels)
		}
		if len(want.Shape) != 2 || want.Shape[0] != nMels || want.Shape[1] != 201 {
			t.Fatalf("mel_%d has shape %v", nMels, want.Shape)
		}
		got := SlaneyFilters(SampleRate, NFFT, nMels, 0, 8000)
		var maxDiff float64
		for i := range got {
			maxDiff = max(maxDiff, math.Abs(float64(got[i])-want.Data[i]))
		}
		t.Logf("mel_%d: max abs diff vs mel_filters.npz = %.3g", nMels, maxDiff)
		if maxDiff > 1e-7 {
			t.Errorf("mel_%d: max abs diff %.3g > 1e-7", nMels, maxDiff)
		}
	}
}

func itoa(n int) string {
	if n == 80 {
		return "80"
	}
	return "128"
}

func goldenJFK(t *testing.T) (audio.Clip, map[string]refdata.Tensor) {
	t.Helper()
	g, err := refdata.ReadSafetensors(refdata.SharedFile(t, "golden/whisper-tiny/jfk.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := audio.ReadWAVFile(refdata.SharedFile(t, "data/jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != SampleRate {
		t.Fatalf("jfk.wav at %d Hz", c.SampleRate)
	}
	return c, g
}

// TestGoldenJFK is the acceptance check: features of jfk.wav against the
// input_features transformers.js fed the encoder, max abs diff ≤ 1e-3.
func TestGoldenJFK(t *testing.T) {
	clip, g := goldenJFK(t)
	want, ok := g["input_features"]
	if !ok || len(want.Data) != 80*3000 {
		t.Fatalf("golden input_features missing or of shape %v", want.Shape)
	}
	e, err := NewExtractor(80)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Compute(nil, clip.Samples, ChunkFrames)
	if err != nil {
		t.Fatal(err)
	}
	var maxDiff, sum float64
	for i := range got {
		d := math.Abs(float64(got[i] - want.Data[i]))
		maxDiff = max(maxDiff, d)
		sum += d
	}
	t.Logf("jfk input_features: max abs diff %.3g, mean abs diff %.3g", maxDiff, sum/float64(len(got)))
	if maxDiff > 1e-3 {
		t.Errorf("max abs diff %.3g > 1e-3", maxDiff)
	}

	// The golden's own filter bank and window agree with ours.
	if f, ok := g["mel_filters"]; ok {
		var d float64
		for i, v := range e.Filters() {
			d = max(d, math.Abs(float64(v-f.Data[i])))
		}
		if d > 1e-7 {
			t.Errorf("filters differ from the golden mel_filters by %.3g", d)
		}
	}
	if w, ok := g["hann_window"]; ok {
		for i, v := range e.win {
			if math.Abs(float64(v-w.Data[i])) > 1e-7 {
				t.Fatalf("window[%d] = %v, golden %v", i, v, w.Data[i])
			}
		}
	}

	// Reusing the extractor and its output buffer gives the same result.
	again, err := e.Compute(got, clip.Samples, ChunkFrames)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i] != want.Data[i] && math.Abs(float64(again[i]-want.Data[i])) > maxDiff {
			t.Fatalf("second call differs at %d", i)
		}
	}
}

// refLogMel is the feature recipe in float64 with a direct DFT: an
// independent check for frame counts other than 3000.
func refLogMel(x []float32, nMels, nFrames int) []float64 {
	n := nFrames * Hop
	body := make([]float64, n)
	for i := range min(n, len(x)) {
		body[i] = float64(x[i])
	}
	sig := make([]float64, 0, n+NFFT)
	for i := -NFFT / 2; i < n+NFFT/2; i++ {
		j := i
		for j < 0 || j >= n { // mirror repeatedly, as numpy.pad does when p ≥ n
			if j < 0 {
				j = -j
			}
			if j >= n {
				j = 2*(n-1) - j
			}
		}
		sig = append(sig, body[j])
	}
	filters := SlaneyFilters(SampleRate, NFFT, nMels, 0, 8000)
	cosT, sinT := make([]float64, NFFT), make([]float64, NFFT)
	for i := range NFFT {
		cosT[i], sinT[i] = math.Cos(2*math.Pi*float64(i)/NFFT), math.Sin(2*math.Pi*float64(i)/NFFT)
	}
	out := make([]float64, nMels*nFrames)
	top := math.Inf(-1)
	power := make([]float64, NFFT/2+1)
	for t := range nFrames {
		for k := range power {
			var re, im float64
			for i := range NFFT {
				v := sig[t*Hop+i] * (0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/NFFT))
				re += v * cosT[(k*i)%NFFT]
				im -= v * sinT[(k*i)%NFFT]
			}
			power[k] = re*re + im*im
		}
		for m := range nMels {
			var acc float64
			for k, p := range power {
				acc += float64(filters[m*len(power)+k]) * p
			}
			l := math.Log10(max(acc, 1e-10))
			out[m*nFrames+t] = l
			top = max(top, l)
		}
	}
	for i, v := range out {
		out[i] = (max(v, top-8) + 4) / 4
	}
	return out
}

func TestShortFramesMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 9000) // 0.56 s: trimmed for small nFrames, padded for large
	for i := range x {
		x[i] = float32(0.3*math.Sin(float64(i)*0.05) + 0.05*rng.NormFloat64())
	}
	for _, nMels := range []int{80, 128} {
		e, _ := NewExtractor(nMels)
		for _, nFrames := range []int{1, 2, 37, 56, 90} {
			got, err := e.Compute(nil, x, nFrames)
			if err != nil {
				t.Fatal(err)
			}
			want := refLogMel(x, nMels, nFrames)
			var maxDiff float64
			for i := range want {
				maxDiff = max(maxDiff, math.Abs(float64(got[i])-want[i]))
			}
			if maxDiff > 1e-4 {
				t.Errorf("%d mels, %d frames: max abs diff %.3g vs float64 reference", nMels, nFrames, maxDiff)
			}
		}
	}
}

func TestTrimsLongAudio(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	long := make([]float32, ChunkSamples+16000)
	for i := range long {
		long[i] = float32(rng.Float64() - 0.5)
	}
	e, _ := NewExtractor(80)
	a, err := e.Compute(nil, long, ChunkFrames)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Compute(nil, long[:ChunkSamples], ChunkFrames)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("35-s audio differs from its first 30 s at %d", i)
		}
	}
}

func TestSilenceAndErrors(t *testing.T) {
	e, _ := NewExtractor(80)
	got, err := e.Compute(nil, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != (-10+4)/4.0 {
			t.Fatalf("silence feature %d = %v, want -1.5", i, v)
		}
	}
	if _, err := e.Compute(nil, []float32{0, float32(math.NaN())}, 10); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN: err = %v, want ErrNotFinite", err)
	}
	if _, err := e.Compute(nil, nil, 0); !errors.Is(err, ErrFrames) {
		t.Errorf("0 frames: err = %v, want ErrFrames", err)
	}
	if _, err := NewExtractor(0); err == nil {
		t.Error("NewExtractor(0) succeeded")
	}
}

// BenchmarkLogMel30s is the 30-s Whisper front end on audio with no silent
// frames (every frame pays for its FFT).
func BenchmarkLogMel30s(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, ChunkSamples)
	for i := range x {
		x[i] = float32(0.2*math.Sin(float64(i)*0.01) + 0.01*rng.NormFloat64())
	}
	e, _ := NewExtractor(80)
	dst, _ := e.Compute(nil, x, ChunkFrames)
	b.ResetTimer()
	for range b.N {
		dst, _ = e.Compute(dst, x, ChunkFrames)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/30s")
}

func TestLongFormWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 16000*3+77)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.1)
	}
	e, _ := NewExtractor(80)
	n := LongFormFrames(len(x))
	if n != (len(x)+ChunkSamples)/Hop {
		t.Fatalf("LongFormFrames = %d", n)
	}
	feats, err := e.Compute(nil, x, n)
	if err != nil {
		t.Fatal(err)
	}
	// The first 3000-frame window of a recording shorter than 30 s is the
	// plain 30-s feature set: padding with 30 s of zeros changes nothing
	// but the frames after it.
	want, _ := e.Compute(nil, x, ChunkFrames)
	w := Window(nil, feats, 80, n, 0, ChunkFrames)
	for i := range want {
		if w[i] != want[i] {
			t.Fatalf("window value %d = %v, want %v", i, w[i], want[i])
		}
	}
	// A window running past the end is zero-filled.
	tail := Window(nil, feats, 80, n, n-10, 30)
	for m := range 80 {
		for j := range 30 {
			v := tail[m*30+j]
			if j < 10 && v != feats[m*n+n-10+j] || j >= 10 && v != 0 {
				t.Fatalf("tail[%d][%d] = %v", m, j, v)
			}
		}
	}
}

// BenchmarkLogMelClip is what whisper.Model.NewAudio computes for an 11-s
// clip: its frames followed by 30 s of silence (the silent frames skip
// their FFT, so the work sits at the start).
func BenchmarkLogMelClip(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 11*SampleRate)
	for i := range x {
		x[i] = float32(0.2*math.Sin(float64(i)*0.01) + 0.01*rng.NormFloat64())
	}
	e, _ := NewExtractor(80)
	n := FramesFor(len(x)) + ChunkFrames
	dst, _ := e.Compute(nil, x, n)
	b.ResetTimer()
	for range b.N {
		dst, _ = e.Compute(dst, x, n)
	}
}

// TestLastSound checks lastSound against the padded signal itself: no
// non-zero sample lies after it, and it is exact unless the end's
// reflection may reach the sound.
func TestLastSound(t *testing.T) {
	tests := []struct {
		name string
		x    []float32
		n, p int
	}{
		{"silence", make([]float32, 50), 50, 8},
		{"empty", nil, 40, 8},
		{"sound then silence", append([]float32{0, 1, 2, 0.5}, make([]float32, 40)...), 44, 8},
		{"sound at the end", []float32{0, 0, 0, 3}, 4, 2},
		{"sound within the end's reflection", append([]float32{1, 2, 3}, make([]float32, 5)...), 8, 8},
		{"audio cut short of n", []float32{1, 0, 2}, 60, 8},
		{"shorter than the pad", []float32{4}, 1, 8},
	}
	for _, tt := range tests {
		padded := reflectPad(nil, tt.x, tt.n, tt.p)
		want := len(padded) - 1
		for want >= 0 && padded[want] == 0 {
			want--
		}
		got := lastSound(tt.x, tt.n, tt.p)
		if got < want || got >= len(padded) {
			t.Errorf("%s: lastSound = %d, but the last non-zero sample is at %d of %d", tt.name, got, want, len(padded))
		}
		if got != want && got != len(padded)-1 {
			t.Errorf("%s: lastSound = %d, want %d (or the conservative %d)", tt.name, got, want, len(padded)-1)
		}
	}
}
