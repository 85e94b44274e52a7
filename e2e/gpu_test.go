package e2e

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cuda"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
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
