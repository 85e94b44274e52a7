package e2e

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/speech/say"
)

// Bounds on a listed voice's audio for its language's first sentence of
// languageCases (speed 1). The 41 voices spoke those sentences in 0.31 to
// 0.45 seconds per written word (Kokoro's pauses at the ends included;
// 0.60 when Hindi's first sentence had five words), at −27 to −14 dBFS
// RMS, with 61 to 88 % of their 20-ms frames within 40 dB of the loudest.
// The bounds lie well outside that (length: half the least and over twice
// the most seen; voiced frames: half the least), so a voice fails them
// only when something breaks:
//
//   - 0.15 to 1.2 s a word: far beyond either end of everyday speech (2 to
//     4 words a second); shorter is a voice that stops after a word or two,
//     longer one that holds a sound, repeats, or trails noise — Whisper may
//     hear the words and ignore the rest;
//   - −40 dBFS RMS at least: 13 dB under the quietest voice (af_nova), far
//     above zeros, denormals or a faint hiss;
//   - 30 % of the frames voiced at least: a click or one word in seconds of
//     silence has an RMS but few frames near its loudest.
const (
	minSecondsPerWord = 0.15
	maxSecondsPerWord = 1.2
	minRMSdB          = -40
	minVoiced         = 0.3
)

// TestEveryListedVoice: every voice `say --list-voices` shows
// (say.ListVoices, the call the command prints) speaks its language's first
// sentence of languageCases as `say --voice NAME -o out.wav TEXT` does (a
// say.Synthesizer with default options, so the language is the one the
// voice's name maps to), and must give finite audio, not silent, of
// plausible length (the bounds above), which the language's Whisper judge
// hears within the language's WER bound. Per-voice figures:
// reports/2026-11-23-languages.md, "2026-11-24: every listed voice".
//
// One sentence a voice keeps it bounded: on the shared 2-core AMD EPYC
// (CPUID family 25 model 17), 52 and 58 s for the 41 voices at quiet
// moments, when Whisper small judged Hindi: 1.0 to 2.2 s a voice
// (Kokoro, then Whisper), 5.4 s for the first Hindi voice (small's first
// use), the rest loading the models (say's Kokoro beside the round
// trip's: 0.6 s). With base judging every voice, 107 to 127 s at a load
// average of 5 to 7 (145 and 156 s with small at that load).
func TestEveryListedVoice(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Kokoro in every listed voice and Whisper base; skipped in -short mode")
	}
	ctx := context.Background()
	rt := loadRoundTrip(t)
	list, err := say.ListVoices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("say.ListVoices lists no voice")
	}
	synth, err := say.New(ctx, say.Config{Engine: rt.eng})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { synth.Close() })
	load, warm := synth.LoadTime()
	t.Logf("say's Kokoro beside the round trip's: loaded in %v, warmed in %v", load, warm)
	judges := map[string]judge{}
	for _, v := range list {
		c, ok := languageCaseOf(v.Lang)
		if !ok {
			t.Fatalf("%s is listed in %s (%s), for which languageCases has no sentence", v.Name, v.Language, v.Lang)
		}
		if _, ok := judges[c.judge]; !ok {
			judges[c.judge] = rt.openJudge(t, c.judge)
		}
	}
	for _, v := range list {
		t.Run(v.Name, func(t *testing.T) {
			c, _ := languageCaseOf(v.Lang)
			text := c.sentences[0]
			var audio []float32
			res, err := synth.Synthesize(ctx, say.String(text), say.Options{Voice: v.Name}, func(a say.Audio) error {
				audio = append(audio, a.Samples...)
				return nil
			})
			if err != nil {
				t.Fatalf("%s %q: %v", v.Name, text, err)
			}
			if res.Lang != v.Lang {
				t.Errorf("%s spoke %s; the listing says %s", v.Name, res.Lang, v.Lang)
			}
			st := measure(audio, say.SampleRate)
			perWord := st.seconds / float64(len(strings.Fields(text)))
			heard := judges[c.judge].transcribe(t, whisperRate(t, audio), c.whisper)
			r := wer.Compare(c.ref(0), heard)
			t.Logf("%s %s: %.2f s (%.3f s/word), RMS %.1f dBFS, peak %.1f dBFS (%d samples beyond ±1), %.0f%% voiced; Whisper %s heard %q: %d/%d errors, WER %.1f%%",
				v.Name, v.Lang, st.seconds, perWord, st.rmsDB, st.peakDB, st.overFull, 100*st.voiced, c.judge, heard, r.Errors(), r.Words, 100*r.Rate())
			if st.nonFinite > 0 {
				t.Errorf("%s: %d samples are NaN or infinite", v.Name, st.nonFinite)
			}
			if perWord < minSecondsPerWord || perWord > maxSecondsPerWord {
				t.Errorf("%s: %.2f s for %q is %.3f s a word, outside %.2f–%.2f", v.Name, st.seconds, text, perWord, minSecondsPerWord, maxSecondsPerWord)
			}
			if st.rmsDB < minRMSdB || st.voiced < minVoiced {
				t.Errorf("%s: silent: RMS %.1f dBFS (want ≥ %d), %.0f%% of frames voiced (want ≥ %.0f%%)", v.Name, st.rmsDB, minRMSdB, 100*st.voiced, 100*minVoiced)
			}
			if r.Rate() > c.maxWER {
				t.Errorf("%s: WER %.1f%% is above %s's %.0f%%", v.Name, 100*r.Rate(), v.Lang, 100*c.maxWER)
			}
		})
	}
}

// audioStats are what TestEveryListedVoice checks of a voice's audio.
type audioStats struct {
	seconds       float64
	nonFinite     int     // samples NaN or ±Inf
	overFull      int     // finite samples beyond ±1 (a 16-bit WAV clips them)
	rmsDB, peakDB float64 // of the finite samples, dB re full scale; −Inf for silence
	voiced        float64 // share of whole 20-ms frames within 40 dB of the loudest
}

// measure returns the statistics of audio at rate; a NaN or infinite
// sample counts as 0 in the levels.
func measure(audio []float32, rate int) audioStats {
	st := audioStats{seconds: float64(len(audio)) / float64(rate)}
	frame := rate / 50
	var sum, frameSum, peak float64
	var frames []float64 // mean square of each whole frame
	for i, s := range audio {
		x := float64(s)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			st.nonFinite++
			x = 0
		}
		if math.Abs(x) > 1 {
			st.overFull++
		}
		sum += x * x
		frameSum += x * x
		peak = max(peak, math.Abs(x))
		if (i+1)%frame == 0 {
			frames = append(frames, frameSum/float64(frame))
			frameSum = 0
		}
	}
	st.rmsDB = 10 * math.Log10(sum/float64(max(len(audio), 1)))
	st.peakDB = 20 * math.Log10(peak)
	loudest := 0.0
	for _, e := range frames {
		loudest = max(loudest, e)
	}
	voiced := 0
	for _, e := range frames {
		if e > 0 && e >= loudest*1e-4 { // within 40 dB
			voiced++
		}
	}
	st.voiced = float64(voiced) / float64(max(len(frames), 1))
	return st
}

// TestMeasure: the statistics TestEveryListedVoice bounds tell a tone from
// silence, NaN and samples beyond full scale, and a lone click from
// speech: its RMS (−33.9 dBFS) passes the level bound, its 1 % of voiced
// frames does not.
func TestMeasure(t *testing.T) {
	const rate = 1000 // 20-sample frames
	tone := func(n int, amp float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(amp * math.Sin(2*math.Pi*50*float64(i)/rate))
		}
		return x
	}
	click := make([]float32, 2000)
	click[1000] = 0.9
	withNaN := tone(1000, 0.1)
	withNaN[10], withNaN[20] = float32(math.NaN()), float32(math.Inf(-1))
	loud := tone(1000, 1.5)
	for _, c := range []struct {
		name                  string
		audio                 []float32
		seconds               float64
		nonFinite, overFull   int
		rmsDB, peakDB, voiced float64
	}{
		{"tone", tone(1000, 0.1), 1, 0, 0, -23.0, -20.0, 1},
		{"silence", make([]float32, 1000), 1, 0, 0, math.Inf(-1), math.Inf(-1), 0},
		{"click", click, 2, 0, 0, -33.9, -0.9, 0.01},
		{"nan", withNaN, 1, 2, 0, -23.0, -20.0, 1},
		{"over full scale", loud, 1, 0, 500, 0.5, 3.5, 1},
	} {
		st := measure(c.audio, rate)
		near := func(a, b float64) bool { return a == b || math.Abs(a-b) < 0.1 }
		if st.seconds != c.seconds || st.nonFinite != c.nonFinite || st.overFull != c.overFull ||
			!near(st.rmsDB, c.rmsDB) || !near(st.peakDB, c.peakDB) || !near(st.voiced, c.voiced) {
			t.Errorf("%s: %+v; want %v s, %d non-finite, %d over, RMS %.1f, peak %.1f dBFS, %.2f voiced",
				c.name, st, c.seconds, c.nonFinite, c.overFull, c.rmsDB, c.peakDB, c.voiced)
		}
	}
}
