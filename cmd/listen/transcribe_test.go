package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/weights"
)

// requireWhisper skips loudly when Whisper tiny or the VAD is not in the
// model cache (the CLI would fetch them).
func requireWhisper(t *testing.T) {
	t.Helper()
	requireModel(t)
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Ready(weights.WhisperTiny) {
		t.Skipf("SKIPPED: whisper-tiny is not in the model cache %s — run `go run ./cmd/models fetch whisper-tiny` (or `make models`)", c.Root)
	}
}

// dataFile returns a path under ../shared/data, skipping when absent.
func dataFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(filepath.Dir(goldenWAV(t, "jfk"))), "..", "data", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIPPED: %s not found: %v", p, err)
	}
	return p
}

// Reference transcripts of ../shared/data, from ../shared/models/MODELS.md.
const jfkRef = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."

var cardsRef = map[string]string{
	"001": "ten of clubs", "002": "four queen of clubs", "003": "seven of clubs",
	"004": "five five", "005": "eight of spades four of clubs seven of hearts",
}

func TestTranscribeJFK(t *testing.T) {
	requireWhisper(t)
	jfk := dataFile(t, "jfk.wav")
	code, out, errs := runListen(t, jfk)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if r := wer.Compare(jfkRef, out); r.Errors() != 0 {
		t.Errorf("transcript %q: %d word errors (%+v), want the sentence word for word", out, r.Errors(), r)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("one window (11 s of speech) should print one line, got %q", out)
	}
}

func TestTranscribeJSONAndScorecard(t *testing.T) {
	requireWhisper(t)
	card := filepath.Join(t.TempDir(), "card.json")
	code, out, errs := runListen(t, "--json", "--tokens", "--language", "en", "--scorecard", card, dataFile(t, "jfk.wav"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var text []string
	last := 0.0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var seg struct {
			Start, End   float64
			Text         string
			Tokens       []int32
			AvgLogProb   *float64 `json:"avg_logprob"`
			NoSpeechProb *float64 `json:"no_speech_prob"`
			Language     string
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&seg); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if seg.Start < last || seg.End <= seg.Start || seg.End > 11.1 || len(seg.Tokens) == 0 || seg.AvgLogProb == nil || seg.NoSpeechProb == nil ||
			seg.Language != "en" || seg.Text != strings.TrimSpace(seg.Text) {
			t.Errorf("segment %+v (after %v)", seg, last)
		}
		last = seg.End
		text = append(text, seg.Text)
	}
	if r := wer.Compare(jfkRef, strings.Join(text, " ")); r.Errors() != 0 {
		t.Errorf("segments %q: %+v", text, r)
	}
	cards, err := scorecards.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	c := cards[0]
	if c.Pipeline != "listen" || c.RTF == nil || c.AudioInSeconds == nil || *c.AudioInSeconds < 10.9 || c.TTFAMs == nil || c.Labels["eou_to_text_p50_ms"] == "" {
		t.Errorf("scorecard: %+v", c)
	}
	if c.Backend != "cpu" || c.ProgramsCompiled == nil || *c.ProgramsCompiled == 0 || c.GraphBuilds == nil || *c.GraphBuilds < *c.ProgramsCompiled ||
		c.Transfers == nil || *c.Transfers != 0 || c.TransferBytes == nil || c.DevicePeakBytes == nil || c.Dispatches == nil {
		t.Errorf("scorecard engine fields: backend %q, programs_compiled %v, graph_builds %v, transfers %v, transfer_bytes %v, device_peak_bytes %v, dispatches %v",
			c.Backend, c.ProgramsCompiled, c.GraphBuilds, c.Transfers, c.TransferBytes, c.DevicePeakBytes, c.Dispatches)
	}
	names := map[string]bool{}
	for _, s := range c.Stages {
		names[s.Name] = true
	}
	for _, want := range []string{"input", "vad", "group", "encode", "decode", "print"} {
		if !names[want] {
			t.Errorf("scorecard has no stage %q: %v", want, names)
		}
	}
}

// TestTranscribeWER transcribes the cards clips and goforward (raw PCM on
// stdin) and reports the word error rate against MODELS.md's transcripts.
// The bound is loose (tiny makes mistakes on these: "for queen"), the
// figure is in the log.
func TestTranscribeWER(t *testing.T) {
	requireWhisper(t)
	var total wer.Result
	for _, id := range []string{"001", "002", "003", "004", "005"} {
		code, out, errs := runListen(t, "--language", "en", dataFile(t, filepath.Join("cards", id+".wav")))
		if code != exitOK {
			t.Fatalf("cards/%s: exit %d: %s", id, code, errs)
		}
		r := wer.Compare(cardsRef[id], out)
		t.Logf("cards/%s: %q vs %q: %d/%d errors", id, strings.TrimSpace(out), cardsRef[id], r.Errors(), r.Words)
		total = total.Add(r)
	}
	raw, err := os.ReadFile(dataFile(t, "goforward.raw"))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--raw-rate", "16000", "--language", "en", "-"}, bytes.NewReader(raw), &out, &errb); code != exitOK {
		t.Fatalf("goforward (raw on stdin): exit %d: %s", code, errb.String())
	}
	r := wer.Compare("go forward ten meters", out.String())
	t.Logf("goforward: %q: %d/%d errors", strings.TrimSpace(out.String()), r.Errors(), r.Words)
	total = total.Add(r)
	t.Logf("WER over cards 001–005 and goforward: %d/%d = %.3f", total.Errors(), total.Words, total.Rate())
	if total.Rate() > 0.25 {
		t.Errorf("WER %.3f > 0.25", total.Rate())
	}
}

// TestTranscribeResampled: a 44.1 kHz file is resampled on the way in.
func TestTranscribeResampled(t *testing.T) {
	requireWhisper(t)
	c, err := audio.ReadWAVFile(dataFile(t, "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	up, err := resampleClip(c.Samples, 16000, 44100)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "jfk44k.wav")
	if err := audio.WriteWAVFile(p, audio.Clip{Samples: up, SampleRate: 44100}, audio.Int16); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runListen(t, "--no-vad", "--language", "en", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if r := wer.Compare(jfkRef, out); r.Errors() > 1 {
		t.Errorf("transcript of the 44.1 kHz file %q: %+v", out, r)
	}
}

func TestTranscribeBadInput(t *testing.T) {
	requireWhisper(t)
	jfk := dataFile(t, "jfk.wav")
	for _, c := range []struct {
		name string
		args func(t *testing.T) []string
		code int
		msg  string
	}{
		{"not audio", func(t *testing.T) []string {
			return []string{writeTemp(t, "x.wav", []byte("hello, this is not audio at all"))}
		}, exitError, "unrecognised audio format: starts with bytes"},
		{"empty audio", func(t *testing.T) []string {
			return []string{writeTemp(t, "empty.wav", wavBytes(16000, 1, nil))}
		}, exitError, "empty audio"},
		{"empty raw stdin", func(*testing.T) []string { return []string{"--raw-rate", "16000", "-"} }, exitError, "empty audio"},
		{"unknown language", func(*testing.T) []string { return []string{"--language", "xx", jfk} }, exitUsage, "unknown language"},
		{"unknown model", func(*testing.T) []string { return []string{"--model", "huge", jfk} }, exitUsage, "unknown model"},
		{"unknown precision", func(*testing.T) []string { return []string{"--precision", "f8", jfk} }, exitUsage, "unknown precision"},
		{"half precision on the cpu", func(*testing.T) []string { return []string{"--device", "cpu", "--precision", "f16", jfk} }, exitUsage, "half-precision products run on a GPU"},
		{"negative beam", func(*testing.T) []string { return []string{"--beam", "-1", jfk} }, exitUsage, "--beam -1"},
		{"two files into one -o file", func(t *testing.T) []string { return []string{"-o", filepath.Join(t.TempDir(), "x.txt"), jfk, jfk} }, exitUsage, "need a folder"},
		// Without the portaudio tag there is no microphone; with it, the
		// test machine has none either.
		{"no microphone", func(*testing.T) []string { return nil }, exitError, "microphone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runListen(t, c.args(t)...)
			if code != c.code || out != "" || !strings.Contains(errs, c.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and a message containing %q", code, out, errs, c.code, c.msg)
			}
		})
	}
}

func resampleClip(x []float32, from, to int) ([]float32, error) {
	rs, err := resample.New(from, to)
	if err != nil {
		return nil, err
	}
	return rs.Flush(rs.Process(nil, x)), nil
}

// TestTranscribeCancelled: a run cancelled while it transcribes fails with
// the context's error and leaves no goroutine behind.
func TestTranscribeCancelled(t *testing.T) {
	requireWhisper(t)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // less than any machine needs for jfk.wav
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--language", "en", dataFile(t, "jfk.wav")}, strings.NewReader(""), &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "context deadline exceeded") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the run, %d before", n, before)
	}
}
