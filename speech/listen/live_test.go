package listen

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/models/whisper/wer"
)

// paceBlock is the block a paced feed writes: 20 ms, as a WebSocket
// client or a sound card delivers audio.
const paceBlock = 20 * time.Millisecond

// pace writes samples (at s's rate) into s in real time, block by block
// at the wall-clock moment each block's last sample would have been
// recorded, then tail of silence (so that the VAD closes the last
// utterance as it would live), then closes s. It returns when it has
// closed s, or with ctx's error.
func pace(ctx context.Context, s *Stream, samples []float32, tail time.Duration) error {
	rate := s.Rate()
	all := append(append([]float32(nil), samples...), make([]float32, int(tail.Seconds()*float64(rate)))...)
	step := int(paceBlock.Seconds() * float64(rate))
	t0 := time.Now()
	for i := 0; i < len(all); i += step {
		j := min(i+step, len(all))
		due := t0.Add(time.Duration(float64(j) / float64(rate) * float64(time.Second)))
		select {
		case <-time.After(time.Until(due)):
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := s.Write(ctx, all[i:j]); err != nil {
			return err
		}
	}
	return s.Close()
}

// liveRun paces clip into a live transcription and returns its events.
func liveRun(ctx context.Context, tr *Transcriber, clip audio.Clip, o Options) ([]Event, *LiveResult, error) {
	s, err := NewStream(clip.SampleRate)
	if err != nil {
		return nil, nil, err
	}
	fed := make(chan error, 1)
	go func() { fed <- pace(ctx, s, clip.Samples, time.Second) }()
	var events []Event
	res, err := tr.TranscribeLive(ctx, s, o, func(e Event) error {
		events = append(events, e)
		return nil
	})
	s.Close()
	if ferr := <-fed; err == nil && ferr != nil {
		err = ferr
	}
	return events, res, err
}

// checkEvents checks the live contract on one run's events and returns
// the final text: every utterance's partials come before its final,
// committed text only grows, and the final begins with the last committed
// text.
func checkEvents(t *testing.T, events []Event) string {
	t.Helper()
	committed := map[int]string{}
	partials := map[int]int{}
	finals := map[int]bool{}
	var final []string
	for i, e := range events {
		if finals[e.Utterance] {
			t.Errorf("event %d: %s of utterance %d after its final", i, e.Kind, e.Utterance)
		}
		got := strings.Join(strings.Fields(e.Committed), " ")
		if prev := committed[e.Utterance]; !strings.HasPrefix(got, prev) {
			t.Errorf("event %d (%s, utterance %d): committed %q retracts %q", i, e.Kind, e.Utterance, got, prev)
		}
		committed[e.Utterance] = got
		switch e.Kind {
		case Partial:
			partials[e.Utterance]++
		case Final:
			finals[e.Utterance] = true
			var segs strings.Builder
			for _, s := range e.Segments {
				segs.WriteString(s.Text)
			}
			if segs.String() != e.Committed {
				t.Errorf("final %d: text %q, segments say %q", e.Utterance, e.Committed, segs.String())
			}
			final = append(final, e.Text())
		}
	}
	for u := range partials {
		if !finals[u] {
			t.Errorf("utterance %d: %d partials and no final", u, partials[u])
		}
	}
	return strings.Join(final, " ")
}

// TestTranscribeLive paces short golden clips into a live run in real
// time (each a few seconds, then 1 s of silence) and checks that the
// utterances are read while spoken, that committed text is never
// retracted, and that the final text equals the offline transcript of
// the file within a word; with Options.Words, that every word of a final
// has a time inside its segment and the words spell its text.
func TestTranscribeLive(t *testing.T) {
	tr := needTiny(t)
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"cards_005.wav", Options{Language: "en"}},
		{"goforward.wav", Options{Language: "en", Words: true}},
	} {
		name := c.name
		t.Run(name, func(t *testing.T) {
			clip, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", name))
			if err != nil {
				t.Fatal(err)
			}
			mem, err := PCM(clip)
			if err != nil {
				t.Fatal(err)
			}
			offline, _, err := collect(context.Background(), tr, mem, Options{Language: "en"})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range offline {
				want = append(want, strings.TrimSpace(s.Text))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			events, res, err := liveRun(ctx, tr, clip, c.o)
			if err != nil {
				t.Fatal(err)
			}
			got := checkEvents(t, events)
			words := 0
			for _, e := range events {
				for _, s := range e.Segments {
					var joined strings.Builder
					for _, w := range s.Words {
						joined.WriteString(w.Text)
						words++
						if w.Start < s.Start-0.02 || w.End > s.End+0.02 || w.End < w.Start {
							t.Errorf("word %+v outside segment [%v, %v]", w, s.Start, s.End)
						}
					}
					if c.o.Words && joined.String() != s.Text {
						t.Errorf("words %q, segment text %q", joined.String(), s.Text)
					}
				}
			}
			if c.o.Words != (words > 0) {
				t.Errorf("Words %v: %d words", c.o.Words, words)
			}
			if res.Partials == 0 || events[0].Kind != Partial {
				t.Errorf("no partial before the first final: %d partials, first event %+v", res.Partials, events[0])
			}
			if r := wer.Compare(strings.Join(want, " "), got); r.Errors() > 1 {
				t.Errorf("final %q, offline %q: %d word errors", got, strings.Join(want, " "), r.Errors())
			}
			for _, e := range events {
				t.Logf("%-7s u%d [%5.2f–%5.2f] %q | %q", e.Kind, e.Utterance, e.Start, e.End, e.Committed, e.Tentative)
			}
			t.Logf("partials %d (skipped %d, cancelled %d), speculated finals %d; first partial %v, eou→final %v", res.Partials, res.Skipped, res.Cancelled, res.Speculated, res.FirstPartial.Max, res.Final.Max)
		})
	}
}

// TestLiveScorecard is the live benchmark: $FORGE_LIVE_BENCH names the
// models ("tiny,base") and $FORGE_LIVE_CLIPS the clips (default every
// clip of ../shared/golden/audio but the 60-s VAD test), with
// Config.WarmUp when $FORGE_LIVE_WARMUP is 1; each is paced in
// real time, so it takes as long as the audio. One JSON line per model
// and clip with the scorecard's live labels and the WER against the
// offline transcript goes to the log and to $FORGE_LIVE_OUT if set.
func TestLiveScorecard(t *testing.T) {
	models := os.Getenv("FORGE_LIVE_BENCH")
	if models == "" {
		t.Skip("set FORGE_LIVE_BENCH=tiny,base to pace the golden clips (takes their length in real time)")
	}
	clips := strings.Split(cmp.Or(os.Getenv("FORGE_LIVE_CLIPS"), "jfk.wav,cards_001.wav,cards_002.wav,cards_003.wav,cards_004.wav,cards_005.wav,goforward.wav"), ",")
	var out *os.File
	if p := os.Getenv("FORGE_LIVE_OUT"); p != "" {
		var err error
		if out, err = os.Create(p); err != nil {
			t.Fatal(err)
		}
		defer out.Close()
	}
	warm := os.Getenv("FORGE_LIVE_WARMUP") == "1"
	for _, model := range strings.Split(models, ",") {
		t0 := time.Now()
		tr, err := New(context.Background(), Config{Model: model, Device: "cpu", WarmUp: warm})
		if err != nil {
			t.Fatal(err)
		}
		loaded := time.Since(t0)
		for _, name := range clips {
			clip, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", name))
			if err != nil {
				t.Fatal(err)
			}
			// Live first: the model's first clip shows what a fresh session
			// pays (see Config.WarmUp, $FORGE_LIVE_WARMUP=1).
			events, res, err := liveRun(context.Background(), tr, clip, Options{Language: "en"})
			if err != nil {
				t.Fatal(err)
			}
			mem, _ := PCM(clip)
			offline, _, err := collect(context.Background(), tr, mem, Options{Language: "en"})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range offline {
				want = append(want, strings.TrimSpace(s.Text))
			}
			got := checkEvents(t, events)
			r := wer.Compare(strings.Join(want, " "), got)
			row := map[string]string{"model": model, "clip": name, "final": got, "offline": strings.Join(want, " "),
				"wer_vs_offline": fmt.Sprintf("%.3f", r.Rate()), "word_errors_vs_offline": fmt.Sprint(r.Errors()),
				"utterances": fmt.Sprint(res.Utterances), "warm_up": fmt.Sprint(warm), "new_ms": fmt.Sprint(loaded.Milliseconds())}
			res.Labels(func(k, v string) { row[k] = v })
			b, _ := json.Marshal(row)
			t.Log(string(b))
			if out != nil {
				fmt.Fprintln(out, string(b))
			}
		}
		tr.Close()
	}
}

// TestGateCovers: a speculative reading serves a Final of the same
// audio, or one the VAD ended earlier within the padding (the next speech
// began within twice the padding), and only when the minimum silence is
// no shorter than the padding; preempt spares exactly those readings.
func TestGateCovers(t *testing.T) {
	const pad = 6400
	for _, c := range []struct {
		name      string
		trim      bool
		specTo    int64
		to        int64
		want      bool
		cancelled bool // preempt(0, to) cancels the reading of [0, specTo)
	}{
		{"same audio", true, 20000, 20000, true, false},
		{"same audio, no trim", false, 20000, 20000, true, false},
		{"ended halfway into the padding", true, 20000, 20000 - pad/2, true, false},
		{"ended at the pause", true, 20000, 20000 - pad, true, false},
		{"ended before the pause", true, 20000, 20000 - pad - 1, false, true},
		{"ended earlier, no trim", false, 20000, 20000 - pad/2, false, true},
		{"ended later", true, 20000, 20001, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &gate{pad: pad, trim: c.trim}
			if got := g.covers(c.specTo, c.to); got != c.want {
				t.Errorf("covers(%d, %d) = %v, want %v", c.specTo, c.to, got, c.want)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if !g.take(true, 0, c.specTo, cancel) {
				t.Fatal("gate busy")
			}
			g.preempt(0, c.to)
			if got := ctx.Err() != nil; got != c.cancelled {
				t.Errorf("preempt cancelled %v, want %v", got, c.cancelled)
			}
		})
	}
}

// TestWarmUp: the warm-up runs on a loaded Transcriber and ends with its
// context.
func TestWarmUp(t *testing.T) {
	tr := needTiny(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"runs", context.Background(), nil},
		{"cancelled", cancelled, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := tr.warmUp(c.ctx); !errors.Is(err, c.want) {
				t.Errorf("warmUp: %v, want %v", err, c.want)
			}
		})
	}
}

// TestGateWait: after a partial that took cost, the next waits for
// costFactor·cost of audio (or the base cadence, if longer) unless the
// decoder has been free for (costFactor−1)·cost.
func TestGateWait(t *testing.T) {
	const every = SampleRate / 2
	now := time.Now()
	for _, c := range []struct {
		name string
		cost time.Duration
		free time.Duration // how long the decoder has been free
		busy bool
		want int64
	}{
		{"fast decode: the base cadence", 100 * time.Millisecond, 0, false, every},
		{"slow decode, just ended", 2 * time.Second, 0, false, 4 * SampleRate},
		{"slow decode, free long enough", 2 * time.Second, 2 * time.Second, false, every},
		{"slow decode, free not long enough", 2 * time.Second, time.Second, false, 4 * SampleRate},
		{"slow decode, another reading in flight", 2 * time.Second, 3 * time.Second, true, 4 * SampleRate},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &gate{cost: c.cost, free: now.Add(-c.free), busy: c.busy}
			if got := g.wait(every, now); got != c.want {
				t.Errorf("wait = %d samples, want %d", got, c.want)
			}
		})
	}
}
