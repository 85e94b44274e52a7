package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/signalcmp"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cuda"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/kokoro/vocab"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
	"github.com/tensorforge/forge/weights/safetensors"
)

// gpu opens the CUDA backend or skips loudly: CI has no GPU.
func gpu(t testing.TB, prec kernels.DType) *cuda.Backend {
	t.Helper()
	b, err := cuda.New(kernels.Options{Precision: prec})
	if err != nil {
		t.Skipf("SKIPPED: no usable CUDA GPU, the GPU model tests do not run: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestGPUWhisperVAD: Silero VAD and Whisper tiny on the GPU give the CPU's
// results on jfk.wav: VAD probabilities within 1e-4, and the same
// transcript in f32 and with f16 products.
func TestGPUWhisperVAD(t *testing.T) {
	ctx := context.Background()
	gpu(t, kernels.F32) // skip before the CPU reference where there is no GPU
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	cpuEng := graph.NewEngine(cpu.New())
	cpuVAD, err := vad.Open(ctx, cpuEng)
	if errors.Is(err, fetch.ErrNoNpm) || errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIPPED: needs the model weights: run `make models` (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cpuVAD.Close()
	wantProbs, err := cpuVAD.Probs(ctx, clip.Samples, clip.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	cpuSTT, err := whisper.Open(ctx, cpuEng, "tiny", whisper.F32)
	if err != nil {
		t.Fatal(err)
	}
	defer cpuSTT.Close()
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(cpuSTT.Tokenizer()))
	opts.Language = "en"
	want, err := cpuSTT.Transcribe(ctx, clip.Samples, opts)
	if err != nil {
		t.Fatal(err)
	}

	for _, prec := range []kernels.DType{kernels.F32, kernels.F16} {
		t.Run(prec.String(), func(t *testing.T) {
			b := gpu(t, prec)
			eng := graph.NewEngine(b)
			if prec == kernels.F32 {
				det, err := vad.Open(ctx, eng)
				if err != nil {
					t.Fatal(err)
				}
				defer det.Close()
				probs, err := det.Probs(ctx, clip.Samples, clip.SampleRate)
				if err != nil {
					t.Fatal(err)
				}
				var worst float64
				for i := range probs {
					worst = max(worst, math.Abs(float64(probs[i]-wantProbs[i])))
				}
				t.Logf("VAD: %d chunks, largest difference from the CPU %.2g", len(probs), worst)
				if worst > 1e-4 || math.IsNaN(worst) {
					t.Errorf("VAD probabilities differ from the CPU's by up to %g", worst)
				}
			}
			stt, err := whisper.Open(ctx, eng, "tiny", whisper.F32)
			if err != nil {
				t.Fatal(err)
			}
			defer stt.Close()
			start := time.Now()
			got, err := stt.Transcribe(ctx, clip.Samples, opts) // cold: compiles and records
			if err != nil {
				t.Fatal(err)
			}
			cold := time.Since(start)
			var warm time.Duration
			for range 3 {
				start = time.Now()
				if got, err = stt.Transcribe(ctx, clip.Samples, opts); err != nil {
					t.Fatal(err)
				}
				warm = time.Since(start)
			}
			st := eng.Stats()
			t.Logf("%s: %q; first run %v, warm %v; %d dispatches, %d transfers (%d bytes), %d programs",
				b.Device(), got.Text, cold, warm, b.Stats().Dispatches, st.Transfers, st.TransferBytes, st.Compiles)
			if got.Text != want.Text {
				t.Errorf("GPU transcript %q, CPU %q", got.Text, want.Text)
			}
		})
	}
}

// unfused is the CUDA backend without its kernels.FusingPlanner
// capability: the engine plans step by step, as before the merges.
type unfused struct {
	kernels.Backend
	b *cuda.Backend
}

// Supports implements kernels.Supporter.
func (u unfused) Supports(s *kernels.Step) bool { return u.b.Supports(s) }

// Plan implements kernels.Planner.
func (u unfused) Plan(steps []kernels.Step) (kernels.Plan, error) { return u.b.Plan(steps) }

// TestGPUFusedDecoder: Whisper tiny's decoder steps with the int8 products
// merged with their norms, elementwise steps and cache updates (fuse.go)
// give the unmerged steps' logits: 36 greedy steps on jfk, logits within
// 1e-4 (max abs; the merges keep the arithmetic, but NVRTC may contract a
// product's scale and the bias after it into one fused multiply-add), the
// same argmax at every step, and fewer kernel launches.
func TestGPUFusedDecoder(t *testing.T) {
	ctx := context.Background()
	be := gpu(t, kernels.F32)
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		logits   [][]float32
		launches int64
	}
	decodeWith := func(b kernels.Backend) run {
		m, err := whisper.Open(ctx, graph.NewEngine(b), "tiny", whisper.F32)
		if err != nil {
			t.Skipf("SKIPPED: needs the model weights: %v", err)
		}
		defer m.Close()
		a, err := m.NewAudio(clip.Samples)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		feats, err := a.Features(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		w, err := m.Encode(ctx, feats)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		prefix := []int32{50258, 50259, 50359, 50363}
		logits := [][]float32{make([]float32, m.Config().Vocab)}
		if err := w.Start(ctx, 1, prefix, []int{len(prefix) - 1}, logits); err != nil {
			t.Fatal(err)
		}
		var r run
		r.logits = append(r.logits, slices.Clone(logits[0]))
		d0 := be.Stats().Dispatches
		for range 36 {
			tok := int32(0)
			for i, v := range logits[0] {
				if v > logits[0][tok] {
					tok = int32(i)
				}
			}
			if err := w.Step(ctx, []int32{tok}, logits); err != nil {
				t.Fatal(err)
			}
			r.logits = append(r.logits, slices.Clone(logits[0]))
		}
		r.launches = be.Stats().Dispatches - d0
		return r
	}
	want := decodeWith(unfused{be, be})
	got := decodeWith(be)
	worst := 0.0
	for s := range want.logits {
		am := func(l []float32) int {
			k := 0
			for i, v := range l {
				if v > l[k] {
					k = i
				}
			}
			return k
		}
		if a, b := am(got.logits[s]), am(want.logits[s]); a != b {
			t.Errorf("step %d: merged argmax %d, unmerged %d", s, a, b)
		}
		for i := range want.logits[s] {
			worst = max(worst, math.Abs(float64(got.logits[s][i]-want.logits[s][i])))
		}
	}
	if !(worst <= 1e-4) {
		t.Errorf("merged logits differ from unmerged by %g (max abs), want ≤ 1e-4", worst)
	}
	t.Logf("37 decoder runs: logits within %.3g; dispatches %d merged, %d unmerged (a replayed CUDA graph counts one)", worst, got.launches, want.launches)
}

// BenchmarkGPUWhisper times Whisper tiny on the GPU piece by piece, model
// warm: the log-mel of jfk (host), one encoder window (with the
// cross-attention keys and values), one greedy decoder step (position
// 4–40, logits read back), and the whole in-process transcription.
func BenchmarkGPUWhisper(b *testing.B) {
	ctx := context.Background()
	clip, err := audio.ReadWAVFile(testenv.Shared(b, "data", "jfk.wav"))
	if err != nil {
		b.Fatal(err)
	}
	// "-unfused" hides the backend's merges (kernels.FusingPlanner), for
	// the figures before and after them.
	for _, c := range []struct {
		name string
		prec kernels.DType
		fuse bool
	}{{"f32", kernels.F32, true}, {"f16", kernels.F16, true}, {"f16-unfused", kernels.F16, false}} {
		be := gpu(b, c.prec)
		var kb kernels.Backend = be
		if !c.fuse {
			kb = unfused{be, be}
		}
		eng := graph.NewEngine(kb)
		m, err := whisper.Open(ctx, eng, "tiny", whisper.F32)
		if err != nil {
			b.Skipf("SKIPPED: needs the model weights: %v", err)
		}
		prec := c.name
		opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
		opts.Language = "en"
		if _, err := m.Transcribe(ctx, clip.Samples, opts); err != nil {
			b.Fatal(err)
		}
		b.Run(prec+"/mel", func(b *testing.B) {
			for range b.N {
				a, err := m.NewAudio(clip.Samples)
				if err != nil {
					b.Fatal(err)
				}
				a.Close()
			}
		})
		a, err := m.NewAudio(clip.Samples)
		if err != nil {
			b.Fatal(err)
		}
		feats, err := a.Features(nil, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(prec+"/encode", func(b *testing.B) {
			for range b.N {
				w, err := m.Encode(ctx, feats)
				if err != nil {
					b.Fatal(err)
				}
				w.Close()
			}
		})
		b.Run(prec+"/step", func(b *testing.B) {
			w, err := m.Encode(ctx, feats)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			prefix := []int32{50258, 50259, 50359, 50363}
			logits := [][]float32{make([]float32, m.Config().Vocab)}
			token := []int32{440}
			start := func() {
				if err := w.Start(ctx, 1, prefix, []int{len(prefix) - 1}, logits); err != nil {
					b.Fatal(err)
				}
			}
			start()
			for w.Positions() < 40 {
				if err := w.Step(ctx, token, logits); err != nil {
					b.Fatal(err)
				}
			}
			start()
			d0 := be.Stats().Dispatches
			b.ResetTimer()
			for range b.N {
				if w.Positions() >= 40 {
					b.StopTimer()
					start()
					b.StartTimer()
				}
				if err := w.Step(ctx, token, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// Kernel launches per token: one graph launch once recorded,
			// every step's kernels where profiling keeps graphs off.
			b.ReportMetric(float64(be.Stats().Dispatches-d0)/float64(b.N), "launches/op")
		})
		b.Run(prec+"/transcribe", func(b *testing.B) {
			for range b.N {
				if _, err := m.Transcribe(ctx, clip.Samples, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(be.Stats().PeakBytes)/(1<<20), "device-peak-MiB")
		})
		a.Close()
		m.Close()
	}
}

// TestGPUProfileWhisper logs where Whisper tiny's device time goes, step
// kind by step kind, for one encoder window and a transcription of jfk. It
// runs only with FORGE_CUDA_PROFILE set (profiling turns CUDA graphs off).
func TestGPUProfileWhisper(t *testing.T) {
	if os.Getenv("FORGE_CUDA_PROFILE") == "" {
		t.Skip("SKIPPED: set FORGE_CUDA_PROFILE=1 to profile the GPU backend")
	}
	ctx := context.Background()
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	b := gpu(t, kernels.F32)
	m, err := whisper.Open(ctx, graph.NewEngine(b), "tiny", whisper.F32)
	if err != nil {
		t.Skipf("SKIPPED: needs the model weights: %v", err)
	}
	defer m.Close()
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
	opts.Language = "en"
	if _, err := m.Transcribe(ctx, clip.Samples, opts); err != nil {
		t.Fatal(err)
	}
	b.ResetProfile()
	if _, err := m.Transcribe(ctx, clip.Samples, opts); err != nil {
		t.Fatal(err)
	}
	t.Logf("Whisper tiny f32, one warm transcription of jfk:\n%s", b.Profile())
	a, err := m.NewAudio(clip.Samples)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	feats, err := a.Features(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.ResetProfile()
	start := time.Now()
	w, err := m.Encode(ctx, feats)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Logf("one encoder window, %v in all (host included):\n%s", time.Since(start), b.Profile())
	bh := gpu(t, kernels.F16)
	mh, err := whisper.Open(ctx, graph.NewEngine(bh), "tiny", whisper.F32)
	if err != nil {
		t.Fatal(err)
	}
	defer mh.Close()
	for range 2 {
		bh.ResetProfile()
		start = time.Now()
		if w, err = mh.Encode(ctx, feats); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	t.Logf("one encoder window with f16 products, %v in all (host included):\n%s", time.Since(start), bh.Profile())
	batch := make([][]float32, 32)
	for i := range batch {
		batch[i] = feats
	}
	for range 2 {
		bh.ResetProfile()
		start = time.Now()
		ws, err := mh.EncodeBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			w.Close()
		}
	}
	t.Logf("32 encoder windows in one batch with f16 products, %v in all (host included):\n%s", time.Since(start), bh.Profile())
}

// BenchmarkGPUKokoro: Kokoro's benchmark paragraph and the streaming first
// piece (16 tokens and the pads) on the GPU, model warm, float32 layers,
// with float32 and with f16 products (the int8 artifact dequantized where
// the float32 one is not in the cache, as on the lent GPU machine). The
// first piece alone is a proxy for first audio; first-audio is the real
// thing, as say streams the paragraph: the whole chunk's text and prosody
// stages, then the first stretch's decoder (SpeakStreamed), timed to its
// first samples.
func BenchmarkGPUKokoro(b *testing.B) {
	ctx := context.Background()
	_, w, ids, style := gpuKokoro(b)
	table := make([]float32, kokoro.VoiceRows*kokoro.StyleSize)
	for r := range kokoro.VoiceRows {
		copy(table[r*kokoro.StyleSize:], style)
	}
	voices, err := kokoro.NewVoicesFromTables(map[string][]float32{"af_fixed": table})
	if err != nil {
		b.Fatal(err)
	}
	voice, err := voices.Voice("af_fixed")
	if err != nil {
		b.Fatal(err)
	}
	chunk := g2p.Chunk{Text: "the benchmark paragraph", Phonemes: paragraphPhonemes, IDs: ids}
	for _, prec := range []kernels.DType{kernels.F32, kernels.F16} {
		m, err := kokoro.New(graph.NewEngine(gpu(b, prec)), w)
		if err != nil {
			b.Fatal(err)
		}
		m = m.Float32()
		firstAudio := func() time.Duration {
			start := time.Now()
			for pcm, err := range m.SpeakStreamed(ctx, chunk, voice, 1, kokoro.Streaming{FirstTokens: kokoro.DefaultFirstTokens}) {
				if err != nil {
					b.Fatal(err)
				}
				if len(pcm) > 0 {
					break // the first samples: the rest is decoded while they play
				}
			}
			return time.Since(start)
		}
		firstAudio() // compiles
		b.Run(prec.String()+"/first-audio", func(b *testing.B) {
			var total time.Duration
			for range b.N {
				total += firstAudio()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-first-audio")
		})
		for name, in := range map[string][]int64{"paragraph": ids, "first-piece": ids[:18]} {
			if _, err := m.Synthesize(ctx, in, style, 1); err != nil { // compiles
				b.Fatal(err)
			}
			b.Run(prec.String()+"/"+name, func(b *testing.B) {
				var samples int
				for range b.N {
					pcm, err := m.Synthesize(ctx, in, style, 1)
					if err != nil {
						b.Fatal(err)
					}
					samples = len(pcm)
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/(float64(samples)/kokoro.SampleRate), "RTF")
			})
		}
	}
}

// TestGPUProfileKokoro logs where Kokoro's device time goes for the
// benchmark paragraph, model warm, with f32 and with f16 products (with
// FORGE_CUDA_PROFILE set).
func TestGPUProfileKokoro(t *testing.T) {
	if os.Getenv("FORGE_CUDA_PROFILE") == "" {
		t.Skip("SKIPPED: set FORGE_CUDA_PROFILE=1 to profile the GPU backend")
	}
	ctx := context.Background()
	_, w, ids, _ := gpuKokoro(t)
	for _, prec := range []kernels.DType{kernels.F32, kernels.F16} {
		b := gpu(t, prec)
		m, err := kokoro.New(graph.NewEngine(b), w)
		if err != nil {
			t.Fatal(err)
		}
		style := make([]float32, kokoro.StyleSize)
		if _, err := m.Synthesize(ctx, ids, style, 1); err != nil {
			t.Fatal(err)
		}
		b.ResetProfile()
		start := time.Now()
		if _, err := m.Synthesize(ctx, ids, style, 1); err != nil {
			t.Fatal(err)
		}
		t.Logf("Kokoro, the benchmark paragraph, %s products, warm, %v in all (host included):\n%s", prec, time.Since(start), b.Profile())
	}
}

// paragraphPhonemes is cmd/say's 30-word benchmark paragraph as espeak-ng
// (en-us) phonemises it: the GPU machine has no espeak-ng, so the GPU
// tests feed these phonemes to Kokoro directly.
const paragraphPhonemes = "ðɪ ˈoʊld lˈaɪthaʊs kˈiːpɚ klˈaɪmd ðə wˈaɪndɪŋ stˈɛɹz ˈiːtʃ ˈiːvnɪŋ, lˈɪt ðə ɡɹˈeɪt lˈæmp, ænd wˈɑːtʃt ʃˈɪps pˈæs sˈeɪfli θɹuː ðə nˈæɹoʊ tʃˈænəl təwˈɔːɹd ðə kwˈaɪət hˈɑːɹbɚ bᵻjˌɔnd ðə hˈɪl."

// gpuKokoro is what the GPU's Kokoro tests synthesise with: the real
// weights (Kokoro does not survive synthetic ones, see weights.Synthetic;
// the GPU machine gets the int8 artifact, which fits the transfer and is
// dequantized to float32), the benchmark paragraph's ids and a fixed
// style. Without the weights the test is skipped. The weights come from
// the model cache, or from the file FORGE_KOKORO_SAFETENSORS names: the
// int8 artifact's converted safetensors with its manifest.json beside it,
// for a machine that cannot take the source ONNX the cache verifies
// against.
func gpuKokoro(t testing.TB) (a *weights.Artifact, w *kokoro.Weights, ids []int64, style []float32) {
	t.Helper()
	if p := os.Getenv("FORGE_KOKORO_SAFETENSORS"); p != "" {
		a = convertedArtifact(t, weights.KokoroV1Int8, p)
	} else {
		id := weights.KokoroV1
		if c, err := weights.NewCache(); err == nil && !c.Ready(id) {
			id = weights.KokoroV1Int8
		}
		var synthetic bool
		if a, synthetic = artifactFor(t, id); synthetic {
			t.Skipf("SKIPPED: Kokoro needs its real weights (%s or %s) in the model cache, or FORGE_KOKORO_SAFETENSORS", weights.KokoroV1, weights.KokoroV1Int8)
		}
	}
	w, err := kokoro.NewWeights(a)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _, err = vocab.Encode(paragraphPhonemes); err != nil {
		t.Fatal(err)
	}
	style = make([]float32, kokoro.StyleSize)
	for i := range style {
		style[i] = 0.1 * float32(math.Sin(float64(i)))
	}
	return a, w, ids, style
}

// convertedArtifact opens model id's converted weights at path, with the
// manifest.json beside them, outside the model cache (which would verify
// the source files too).
func convertedArtifact(t testing.TB, id, path string) *weights.Artifact {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(path), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man weights.Manifest
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatalf("%s's manifest: %v", id, err)
	}
	if man.ID != id {
		t.Fatalf("the manifest beside %s is %q's, want %q's", path, man.ID, id)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a := &weights.Artifact{ID: id, Dir: filepath.Dir(path), Manifest: man, Weights: f}
	t.Cleanup(func() { a.Close() })
	return a
}

// artifactFor opens model id from the cache, or, where only its manifest
// is there (the GPU machine cannot take Kokoro's 325 MB), builds seeded
// synthetic weights of the same names and shapes.
func artifactFor(t testing.TB, id string) (*weights.Artifact, bool) {
	t.Helper()
	c, err := weights.NewCache()
	if err != nil {
		t.Skipf("SKIPPED: no model cache: %v", err)
	}
	if c.Ready(id) {
		a, err := c.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a, false
	}
	man, err := c.Manifest(id)
	if err != nil {
		t.Skipf("SKIPPED: %s is neither in the cache nor described by a manifest there: %v", id, err)
	}
	a, err := weights.Synthetic(*man, 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Dir = filepath.Join(c.Root, id)
	return a, true
}

// TestGPUKokoro: Kokoro on the GPU (f32 and f16 products) against the CPU
// on the same weights, for the benchmark paragraph. The generator reads
// its harmonic source's STFT phase as a number, so a change of arithmetic
// order that flips a phase between +π and −π moves the waveform: with the
// CPU's default host source, which reproduces onnxruntime's float32
// rounding, the CPU's own two SGEMM paths (Go and OpenBLAS) differ by
// Pearson 0.865 and log-spectral RMS 0.277 on this paragraph; with the
// graph source the devices use, 0.9994 and 0.047 (see
// kokoro.Model.GraphSource). The text and prosody stages compute in
// float32 with either precision (graph.Graph.FullPrecision); with f16
// products there, F0 moved by 1.5e-3 and the paragraph's waveform fell to
// Pearson 0.64. The gates, for both precisions: identical durations; F0,
// energy and aligned text features within 1e-3 (relative L2);
// log-spectral RMS within the int8 golden bound (0.35). The waveform is
// compared with the CPU's at the devices' graph source
// (kokoro.Model.GraphSource), where neither side reproduces the
// reference's FFT noise: there, besides the log-spectral bound, Pearson ≥
// 0.999 on the first 16-token piece (the bar) and ≥ 0.998 on the
// paragraph, whose 10.75 s let the GPU's F0 (2e-6 from the CPU's) move
// enough harmonic phases across ±π to cost the fourth nine (0.99898 on
// the H100 in f32). Against the CPU's default host source both are
// reported.
func TestGPUKokoro(t *testing.T) {
	ctx := context.Background()
	gpus := []*cuda.Backend{gpu(t, kernels.F32), gpu(t, kernels.F16)}
	a, w, ids, style := gpuKokoro(t)
	// spoken is one backend's paragraph and first piece, each timed warm.
	type spoken struct {
		*kokoro.Trace
		piece       []float32 // the streaming first piece: 16 tokens and the pads
		warm, first time.Duration
	}
	run := func(b kernels.Backend, graphSource bool) spoken {
		m, err := kokoro.New(graph.NewEngine(b), w)
		if err != nil {
			t.Fatal(err)
		}
		m = m.Float32()
		if graphSource {
			m = m.GraphSource()
		}
		if _, err := m.Forward(ctx, ids, style, 1); err != nil { // cold: compiles
			t.Fatal(err)
		}
		var r spoken
		start := time.Now()
		if r.Trace, err = m.Forward(ctx, ids, style, 1); err != nil {
			t.Fatal(err)
		}
		r.warm = time.Since(start)
		first := ids[:18]
		if _, err := m.Synthesize(ctx, first, style, 1); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if r.piece, err = m.Synthesize(ctx, first, style, 1); err != nil {
			t.Fatal(err)
		}
		r.first = time.Since(start)
		return r
	}
	want := run(cpu.New(), false)
	// The devices build the generator's source as graph ops; the CPU's
	// default reproduces the reference's FFT rounding noise instead (see
	// kokoro.Model.GraphSource), so the waveforms compare at the CPU's
	// graph source: the same arithmetic in another order.
	same := run(cpu.New(), true)
	t.Logf("weights: %s; CPU: %d samples in %v", a.ID, len(want.Audio), want.warm)
	for _, b := range gpus {
		prec := b.Precision()
		got := run(b, false)
		if !slices.Equal(got.Durations, want.Durations) {
			t.Errorf("%s: durations differ from the CPU's", prec)
			continue
		}
		audio := float64(len(got.Audio)) / kokoro.SampleRate
		f0, n, asr := signalcmp.RelL2(got.F0, want.F0), signalcmp.RelL2(got.N, want.N), signalcmp.RelL2(got.ASR, want.ASR)
		ls, err := signalcmp.LogSpectralRMS(got.Audio, same.Audio)
		if err != nil {
			t.Fatal(err)
		}
		pearson, piece := signalcmp.Pearson(got.Audio, same.Audio), signalcmp.Pearson(got.piece, same.piece)
		lsHost, err := signalcmp.LogSpectralRMS(got.Audio, want.Audio)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: paragraph in %v (RTF %.4f), first 16-token piece in %v; against the CPU: F0 %.1e, N %.1e, ASR %.1e (rel L2); waveform against the CPU's graph source: log-spectral RMS %.4f, Pearson %.5f, first piece %.5f (against its host source: %.4f, %.4f)",
			b.Device(), got.warm, got.warm.Seconds()/audio, got.first, f0, n, asr, ls, pearson, piece, lsHost, signalcmp.Pearson(got.Audio, want.Audio))
		if !(pearson >= 0.998 && piece >= 0.999) {
			t.Errorf("%s: waveform Pearson %.5f (paragraph), %.5f (first piece) against the CPU with the same (graph) source, want ≥ 0.998 and ≥ 0.999", prec, pearson, piece)
		}
		const stageTol, specTol = 1e-3, 0.35
		if !(f0 <= stageTol) || !(n <= stageTol) || !(asr <= stageTol) {
			t.Errorf("%s: F0/N/ASR differ from the CPU's by %.2g/%.2g/%.2g (rel L2 > %g)", prec, f0, n, asr, stageTol)
		}
		if !(ls <= specTol) {
			t.Errorf("%s: log-spectral RMS %.4f against the CPU, want ≤ %g", prec, ls, specTol)
		}
	}
}

// TestGPUWhisperBase: Whisper base (real or synthetic weights) on the GPU
// gives the CPU's encoder output (relative L2 ≤ 1e-4 in f32) and the same
// 16 greedy tokens from it.
func TestGPUWhisperBase(t *testing.T) {
	ctx := context.Background()
	g := gpu(t, kernels.F32)
	a, synthetic := artifactFor(t, weights.WhisperBase)
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(b kernels.Backend) ([]float32, []int32) {
		m, err := whisper.New(graph.NewEngine(b), a, whisper.F32)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		au, err := m.NewAudio(clip.Samples)
		if err != nil {
			t.Fatal(err)
		}
		defer au.Close()
		feats, err := au.Features(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := m.EncoderOutput(ctx, feats)
		if err != nil {
			t.Fatal(err)
		}
		win, err := m.Encode(ctx, feats)
		if err != nil {
			t.Fatal(err)
		}
		defer win.Close()
		logits := [][]float32{make([]float32, m.Config().Vocab)}
		prefix := []int32{50258, 50259, 50359, 50363}
		if err := win.Start(ctx, 1, prefix, []int{len(prefix) - 1}, logits); err != nil {
			t.Fatal(err)
		}
		var toks []int32
		for range 16 {
			best := int32(0)
			for i, v := range logits[0] {
				if v > logits[0][best] {
					best = int32(i)
				}
			}
			toks = append(toks, best)
			if err := win.Step(ctx, []int32{best}, logits); err != nil {
				t.Fatal(err)
			}
		}
		return enc, toks
	}
	wantEnc, wantToks := run(cpu.New())
	gotEnc, gotToks := run(g)
	var num, den float64
	for i := range wantEnc {
		d := float64(gotEnc[i] - wantEnc[i])
		num += d * d
		den += float64(wantEnc[i]) * float64(wantEnc[i])
	}
	rel := math.Sqrt(num / den)
	t.Logf("whisper-base (synthetic %t): encoder relative L2 %.2g; tokens GPU %v, CPU %v", synthetic, rel, gotToks, wantToks)
	if rel > 1e-4 || math.IsNaN(rel) {
		t.Errorf("encoder output differs from the CPU's by %g (relative L2)", rel)
	}
	if !slices.Equal(gotToks, wantToks) {
		t.Errorf("greedy tokens differ: GPU %v, CPU %v", gotToks, wantToks)
	}
}

// BenchmarkGPUBatch measures the batched paths a server on one GPU uses:
// Whisper tiny's encoder over 32 windows in one pass (per window),
// transcribing 32 recordings at once (audio seconds per wall second), and
// Silero VAD over 1,000 streams, one chunk each per call (chunks per
// second), with f32 and with f16 products. The CPU runs the same for
// comparison with -test.bench CPUBatch... on the CPU machines.
func BenchmarkGPUBatch(b *testing.B) {
	for _, prec := range []kernels.DType{kernels.F32, kernels.F16} {
		b.Run(prec.String(), func(b *testing.B) { benchBatch(b, gpu(b, prec)) })
	}
}

// BenchmarkCPUBatch is BenchmarkGPUBatch on the CPU backend.
func BenchmarkCPUBatch(b *testing.B) {
	benchBatch(b, cpu.New())
}

func benchBatch(b *testing.B, be kernels.Backend) {
	ctx := context.Background()
	clip, err := audio.ReadWAVFile(testenv.Shared(b, "data", "jfk.wav"))
	if err != nil {
		b.Fatal(err)
	}
	eng := graph.NewEngine(be)
	m, err := whisper.Open(ctx, eng, "tiny", whisper.F32)
	if err != nil {
		b.Skipf("SKIPPED: needs the model weights: %v", err)
	}
	defer m.Close()
	const n = 32
	recs := make([][]float32, n)
	var audioSec float64
	for i := range recs {
		// jfk cut at different lengths: utterances of 5.5 to 11 s.
		recs[i] = clip.Samples[:len(clip.Samples)*(n+i)/(2*n)]
		audioSec += float64(len(recs[i])) / 16000
	}
	a, err := m.NewAudio(clip.Samples)
	if err != nil {
		b.Fatal(err)
	}
	feat, err := a.Features(nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	a.Close()
	feats := make([][]float32, n)
	for i := range feats {
		feats[i] = feat
	}
	b.Run("encoder-batch32", func(b *testing.B) {
		for i := range b.N + 1 { // the first pass compiles
			if i == 1 {
				b.ResetTimer()
			}
			ws, err := m.EncodeBatch(ctx, feats)
			if err != nil {
				b.Fatal(err)
			}
			for _, w := range ws {
				w.Close()
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N*n), "ms/window")
	})
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
	opts.Language = "en"
	b.Run("transcribe-32", func(b *testing.B) {
		if _, err := m.TranscribeMany(ctx, recs, opts); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := m.TranscribeMany(ctx, recs, opts); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(audioSec*float64(b.N)/b.Elapsed().Seconds(), "audio-s/s")
	})
	det, err := vad.Open(ctx, eng)
	if err != nil {
		b.Fatal(err)
	}
	defer det.Close()
	const streams = 1000
	bt, err := det.NewBatch(ctx, vad.Rate16k, streams)
	if err != nil {
		b.Fatal(err)
	}
	defer bt.Close()
	in := make([][]float32, streams)
	for i := range in {
		off := (i * 512 * 7) % (len(clip.Samples) - 512)
		in[i] = clip.Samples[off : off+512]
	}
	out := make([]float32, streams)
	b.Run("vad-1000-streams", func(b *testing.B) {
		for i := range b.N + 1 {
			if i == 1 {
				b.ResetTimer()
			}
			if err := bt.Probs(ctx, in, out); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(streams*b.N)/b.Elapsed().Seconds(), "chunks/s")
	})
}
