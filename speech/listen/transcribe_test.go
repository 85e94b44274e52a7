package listen

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/weights"
	"go.uber.org/goleak"
)

// jfkRef is jfk.wav's reference transcript (../shared/models/MODELS.md).
const jfkRef = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."

var (
	tinyOnce sync.Once
	tiny     *Transcriber
	tinyErr  error
)

// needTiny returns a Transcriber on Whisper tiny and the VAD, shared by
// the tests (they also check that it is shared safely), skipping loudly
// when the models are not in the cache.
func needTiny(t *testing.T) *Transcriber {
	t.Helper()
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{weights.WhisperTiny, weights.SileroVADv6} {
		if !c.Ready(id) {
			t.Skipf("SKIPPED: %s is not in the model cache %s — run `make models`", id, c.Root)
		}
	}
	tinyOnce.Do(func() { tiny, tinyErr = New(context.Background(), Config{Device: "cpu"}) })
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tiny
}

func jfk(t *testing.T) audio.Clip {
	t.Helper()
	c, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect runs a transcription and returns its segments.
func collect(ctx context.Context, tr *Transcriber, in Input, o Options) ([]Segment, *Result, error) {
	var segs []Segment
	res, err := tr.Transcribe(ctx, in, o, func(s Segment) error {
		segs = append(segs, s)
		return nil
	})
	return segs, res, err
}

// TestTranscribe transcribes jfk.wav from every kind of input and checks
// the words, the segments' order and numbering, and the result.
func TestTranscribe(t *testing.T) {
	tr := needTiny(t)
	clip := jfk(t)
	up, err := resample.Resample(clip.Samples, 16000, 44100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		in        func() (Input, error)
		o         Options
		maxErrors int
	}{
		{"file", func() (Input, error) {
			f, err := os.Open(testenv.Shared(t, "data", "jfk.wav"))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { f.Close() })
			return File(f)
		}, Options{}, 0},
		{"pcm at 44.1 kHz without the VAD", func() (Input, error) { return PCM(audio.Clip{Samples: up, SampleRate: 44100}) }, Options{NoVAD: true, Language: "en"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := c.in()
			if err != nil {
				t.Fatal(err)
			}
			segs, res, err := collect(context.Background(), tr, in, c.o)
			if err != nil {
				t.Fatal(err)
			}
			var text []string
			last := 0.0
			for i, s := range segs {
				if s.ID != i || s.Start < last || s.End < s.Start || s.End > 11.1 || s.Language != "en" {
					t.Errorf("segment %d: %+v (after %v)", i, s, last)
				}
				last = s.End
				text = append(text, s.Text)
			}
			if r := wer.Compare(jfkRef, strings.Join(text, "")); r.Errors() > c.maxErrors {
				t.Errorf("transcript %q: %d word errors (%+v)", strings.Join(text, ""), r.Errors(), r)
			}
			if len(segs) == 0 || !segs[len(segs)-1].EndsUtterance || segs[len(segs)-1].Utterance != res.Utterances-1 {
				t.Errorf("last segment %+v of %d utterances", segs[len(segs)-1], res.Utterances)
			}
			if res.Language != "en" || res.LanguageName != "english" || res.Duration < 10.9 || res.Duration > 11.1 || res.Truncated != nil {
				t.Errorf("result %+v", res)
			}
			card := res.Scorecard()
			if card.RTF == nil || card.AudioInSeconds == nil || card.Labels["language"] != "en" || len(card.Stages) < 5 {
				t.Errorf("scorecard %+v", card)
			}
		})
	}
}

// TestTranscribeStream: audio written to a Stream in 20 ms blocks (as a
// WebSocket client sends it) is transcribed as the same samples in memory
// are with Options.Live: utterance by utterance as the VAD closes them.
func TestTranscribeStream(t *testing.T) {
	tr := needTiny(t)
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "cards", "005.wav"))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := PCM(clip)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := collect(context.Background(), tr, mem, Options{Language: "en", Live: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStream(clip.SampleRate)
	if err != nil {
		t.Fatal(err)
	}
	fed := make(chan error, 1)
	go func() {
		step := clip.SampleRate / 50
		for i := 0; i < len(clip.Samples); i += step {
			if err := s.Write(context.Background(), clip.Samples[i:min(i+step, len(clip.Samples))]); err != nil {
				fed <- err
				return
			}
		}
		fed <- s.Close()
	}()
	got, res, err := collect(context.Background(), tr, s, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !slices.EqualFunc(got, want, func(a, b Segment) bool {
		return a.Text == b.Text && a.Start == b.Start && a.End == b.End && a.Utterance == b.Utterance
	}) {
		t.Errorf("stream: %+v\nin memory: %+v", got, want)
	}
	t.Logf("%d utterances, %.2f s: %q", res.Utterances, res.Duration, got[0].Text)
}

// TestTranscribeConcurrent: runs sharing one Transcriber at the same time
// give each the segments it gives alone (under -race: nothing shared
// unsynchronised between runs).
func TestTranscribeConcurrent(t *testing.T) {
	tr := needTiny(t)
	clip := jfk(t)
	run := func(lang string) ([]Segment, error) {
		in, err := PCM(clip)
		if err != nil {
			return nil, err
		}
		segs, _, err := collect(context.Background(), tr, in, Options{Language: lang})
		return segs, err
	}
	want, err := run("en")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([][]Segment, 2)
	errs := make([]error, 2)
	for i, lang := range []string{"en", ""} { // the second detects the language
		wg.Go(func() { got[i], errs[i] = run(lang) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !slices.EqualFunc(got[i], want, func(a, b Segment) bool { return a.Text == b.Text && a.Start == b.Start && a.End == b.End }) {
			t.Errorf("run %d: %+v, want %+v", i, got[i], want)
		}
	}
}

// TestTranscribeErrors: bad options fail before any audio is read; an
// error of the callback, or the context ending, stops the run with that
// error and leaves no goroutine.
func TestTranscribeErrors(t *testing.T) {
	tr := needTiny(t)
	clip := jfk(t)
	errStop := errors.New("stop")
	for _, c := range []struct {
		name string
		o    Options
		ctx  func() (context.Context, context.CancelFunc)
		emit func(Segment) error
		want error
	}{
		{name: "unknown language", o: Options{Language: "xx"}, want: ErrUnknownLanguage},
		{name: "beam", o: Options{Beam: 33}, want: ErrBadOptions},
		{name: "temperature", o: Options{Temperature: 1.5}, want: ErrBadOptions},
		{name: "vad threshold", o: Options{VAD: vad.Options{Threshold: 2}}, want: ErrBadOptions},
		{name: "callback error", emit: func(Segment) error { return errStop }, want: errStop},
		// 20 ms: far less than any machine needs to transcribe jfk.wav's
		// 11 s (300 ms did not hold once the VAD, encoder and decoder got
		// faster), so the deadline always falls inside the run.
		{name: "deadline", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, want: context.DeadlineExceeded},
		{name: "cancelled before", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, want: context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ctx, cancel := context.WithCancel(context.Background())
			if c.ctx != nil {
				ctx, cancel = c.ctx()
			}
			defer cancel()
			emit := c.emit
			if emit == nil {
				emit = func(Segment) error { return nil }
			}
			in, err := PCM(clip)
			if err != nil {
				t.Fatal(err)
			}
			o := c.o
			if o.Language == "" {
				o.Language = "en"
			}
			if _, err := tr.Transcribe(ctx, in, o, emit); !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

// TestDetect: the VAD alone finds jfk.wav's reference segments (those of
// get_speech_timestamps with the defaults), from 16 kHz and from 8 kHz
// audio, which the model takes without resampling.
func TestDetect(t *testing.T) {
	needTiny(t)
	d, err := NewDetector(context.Background(), Config{Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	clip := jfk(t)
	in, err := PCM(clip)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	res, err := d.Detect(context.Background(), in, vad.Options{}, func(s Span) error {
		got = append(got, strconv.FormatFloat(s.Start, 'f', -1, 64)+" "+strconv.FormatFloat(s.End, 'f', -1, 64))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0.322 2.27", "3.266 4.446", "5.378 7.678", "8.162 10.622"}
	if !slices.Equal(got, want) || res.Utterances != 4 {
		t.Errorf("spans %q (%d), want %q", got, res.Utterances, want)
	}
}

// punctuation returns the punctuation marks of s in order.
func punctuation(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(",.?!;:", r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestPunctuationThroughVAD: the VAD path hands Whisper whole utterances
// (short pauses as recorded, not zeroed), so the golden clips come out
// punctuated as when the whole file is transcribed at once. Before, with
// Whisper base, jfk.wav lost its comma before "ask what" and its final
// period on the VAD path.
func TestPunctuationThroughVAD(t *testing.T) {
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{weights.WhisperBase, weights.SileroVADv6} {
		if !c.Ready(id) {
			t.Skipf("SKIPPED: %s is not in the model cache %s — run `make models`", id, c.Root)
		}
	}
	base, err := New(context.Background(), Config{Model: "base", Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	for _, m := range []struct {
		name string
		tr   func() *Transcriber
	}{{"base", func() *Transcriber { return base }}, {"tiny", func() *Transcriber { return needTiny(t) }}} {
		for _, clip := range []string{"jfk", "cards_001", "cards_005", "goforward"} {
			t.Run(m.name+"/"+clip, func(t *testing.T) {
				samples, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", clip+".wav"))
				if err != nil {
					t.Fatal(err)
				}
				text := func(noVAD bool) string {
					in, err := PCM(samples)
					if err != nil {
						t.Fatal(err)
					}
					segs, _, err := collect(context.Background(), m.tr(), in, Options{Language: "en", NoVAD: noVAD})
					if err != nil {
						t.Fatal(err)
					}
					var b strings.Builder
					for _, s := range segs {
						b.WriteString(s.Text)
					}
					return strings.TrimSpace(b.String())
				}
				vadText, whole := text(false), text(true)
				if punctuation(vadText) != punctuation(whole) {
					t.Errorf("through the VAD %q, whole %q", vadText, whole)
				}
				if clip == "jfk" && (!strings.Contains(vadText, "for you, ask what") || !strings.HasSuffix(vadText, "country.")) {
					t.Errorf("jfk through the VAD: %q", vadText)
				}
			})
		}
	}
}
