package say

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tensorforge/forge/weights"
	"go.uber.org/goleak"
)

var (
	synthOnce sync.Once
	synth     *Synthesizer
	synthErr  error
)

// needSynth returns a Synthesizer shared by the tests (they also check
// that it is shared safely), skipping loudly without espeak-ng or the
// Kokoro files in the model cache.
func needSynth(t *testing.T) *Synthesizer {
	t.Helper()
	needFrontEnd(t)
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{weights.KokoroV1, weights.KokoroVoices} {
		if !c.Ready(id) {
			t.Skipf("SKIP: %s is not in the model cache %s: run `make models`", id, c.Root)
		}
	}
	synthOnce.Do(func() { synth, synthErr = New(context.Background(), Config{Device: "cpu"}) })
	if synthErr != nil {
		t.Fatal(synthErr)
	}
	return synth
}

// speak runs a synthesis and returns its samples.
func speak(ctx context.Context, s *Synthesizer, text Text, o Options) ([]float32, *Result, error) {
	var pcm []float32
	res, err := s.Synthesize(ctx, text, o, func(a Audio) error {
		pcm = append(pcm, a.Samples...)
		return nil
	})
	return pcm, res, err
}

// TestSynthesize: "Hello world." at 16 kHz is about 1.65 s of sound
// (66 frames of 600 samples at 24 kHz in the golden durations), and the
// result and scorecard say so.
func TestSynthesize(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	s := needSynth(t)
	pcm, res, err := speak(context.Background(), s, String("Hello world."), Options{Rate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	var peak float32
	for _, x := range pcm {
		peak = max(peak, x, -x)
	}
	if len(pcm) < 20000 || len(pcm) > 30000 || peak < 0.05 || res.Samples != int64(len(pcm)) || res.Rate != 16000 {
		t.Fatalf("%d samples (result %d at %d Hz), peak %v", len(pcm), res.Samples, res.Rate, peak)
	}
	if res.Voice != DefaultVoice || res.Lang != "en-us" || res.TTFA <= 0 {
		t.Errorf("result %+v", res)
	}
	card := res.Scorecard()
	if card.TTFAMs == nil || card.RTF == nil || card.AudioOutSeconds == nil || card.Labels["voice"] != DefaultVoice || len(card.Models) != 1 {
		t.Errorf("scorecard %+v", card)
	}
}

// TestColdSynthesizer: a Synthesizer made with Config.Cold skips the
// warm-up, speaks the same samples as a warmed one, and its scorecard
// says that its time to first audio includes the first-use costs.
func TestColdSynthesizer(t *testing.T) {
	if testing.Short() {
		t.Skip("two syntheses; skipped in -short mode")
	}
	warm := needSynth(t)
	ctx := context.Background()
	cold, err := New(ctx, Config{Device: "cpu", Cold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	if _, w := cold.LoadTime(); w != 0 {
		t.Errorf("cold synthesizer warmed for %v", w)
	}
	want, _, err := speak(ctx, warm, String("Button."), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, res, err := speak(ctx, cold, String("Button."), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("cold run: %d samples, %d warmed: want the same samples", len(got), len(want))
	}
	if from := res.Scorecard().Labels["ttfa_from"]; !strings.Contains(from, "not warmed") {
		t.Errorf("scorecard ttfa_from %q: want it to say the model was not warmed", from)
	}
}

// TestSynthesizeConcurrent: runs with different voices sharing one
// Synthesizer at the same time give each the waveform it gives alone.
func TestSynthesizeConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("four syntheses; skipped in -short mode")
	}
	s := needSynth(t)
	voices := []string{"af_heart", "am_michael"}
	want := make([][]float32, len(voices))
	for i, v := range voices {
		var err error
		if want[i], _, err = speak(context.Background(), s, String("Good morning."), Options{Voice: v}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	got := make([][]float32, len(voices))
	errs := make([]error, len(voices))
	for i, v := range voices {
		wg.Go(func() {
			got[i], _, errs[i] = speak(context.Background(), s, String("Good morning."), Options{Voice: v})
		})
	}
	wg.Wait()
	for i := range voices {
		if errs[i] != nil || !slices.Equal(got[i], want[i]) {
			t.Errorf("%s: %v; waveform equal to the run alone: %v", voices[i], errs[i], slices.Equal(got[i], want[i]))
		}
	}
}

// TestSynthesizeErrors: bad options and bad strings fail before any audio
// is handed over; an error of the callback, or the context ending, stops
// the run with that error and leaves no goroutine.
func TestSynthesizeErrors(t *testing.T) {
	s := needSynth(t)
	errStop := errors.New("stop")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		text Text
		o    Options
		ctx  context.Context
		emit func(Audio) error
		want error
	}{
		{name: "unknown voice", o: Options{Voice: "xx_nobody"}, want: ErrUnknownVoice},
		{name: "bad mix", o: Options{Voice: "af_heart:-1"}, want: ErrBadVoiceSpec},
		{name: "bad lang", o: Options{Lang: "ja"}, want: ErrLang},
		{name: "speed", o: Options{Speed: 11}, want: ErrBadOptions},
		{name: "rate", o: Options{Rate: 500}, want: ErrBadOptions},
		{name: "max tokens", o: Options{MaxTokens: 9}, want: ErrBadOptions},
		{name: "blank", text: String(" \t"), want: ErrNoSpeech},
		{name: "invalid utf-8", text: String("hi \xff"), want: ErrInvalidUTF8},
		{name: "callback error", emit: func(Audio) error { return errStop }, want: errStop},
		{name: "cancelled", ctx: cancelled, want: context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			text, ctx := c.text, c.ctx
			if text == nil {
				text = String("Hello.")
			}
			if ctx == nil {
				ctx = context.Background()
			}
			emitted := 0
			_, err := s.Synthesize(ctx, text, c.o, func(a Audio) error {
				emitted++
				if c.emit != nil {
					return c.emit(a)
				}
				return nil
			})
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.emit == nil && emitted > 0 {
				t.Errorf("%d blocks handed over before the error", emitted)
			}
		})
	}
}
