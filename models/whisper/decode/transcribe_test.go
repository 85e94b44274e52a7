package decode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fakeAudio is a recording of n frames whose windows are decoded by
// per-window models, chosen by the window's seek.
type fakeAudio struct {
	frames  int
	windows func(seek, frames int) model
	encoded [][2]int // (seek, frames) of each Encode call
	decs    []*fakeDecoder
}

func (a *fakeAudio) Frames() int { return a.frames }

func (a *fakeAudio) Encode(ctx context.Context, seek, frames int) (Decoder, error) {
	if seek < 0 || frames <= 0 || frames > WindowFrames || seek+frames > a.frames {
		return nil, fmt.Errorf("fake audio: bad window [%d, %d) of %d frames", seek, seek+frames, a.frames)
	}
	a.encoded = append(a.encoded, [2]int{seek, frames})
	d := &fakeDecoder{m: a.windows(seek, frames)}
	a.decs = append(a.decs, d)
	return d, nil
}

// sampledFrom returns a model that emits script after whatever prefix the
// decoder was started with (prompts change its length), with a low
// no-speech logit.
func sampledFrom(script ...int32) model {
	return func(seq []int32, l []float32) {
		sot := slices.Index(seq, tSOT)
		start := sot + 3 // SOT, language, task
		if sot < 0 || len(seq) < start {
			start = len(seq) + 1 // detection pass on SOT alone
		} else if len(seq) > start && seq[start] == tNoTimestamps {
			start++
		}
		scripted(start, script...)(seq, l)
	}
}

func transcribeOpts() TranscribeOptions {
	return DefaultTranscribeOptions(Options{
		Language: "en", Timestamps: true, Rules: OpenAI, SuppressBlank: true, MaxInitialTimestamp: 1,
		SuppressTokens: []int32{9}, // w9, and with it the specials
	})
}

// TestSeekArithmetic follows the seek through a 65 s recording: the first
// window ends with an unfinished segment (seek to its start), the second
// with a lone timestamp (seek a whole window), the last is short.
func TestSeekArithmetic(t *testing.T) {
	a := &fakeAudio{frames: 6500, windows: func(seek, frames int) model {
		switch seek {
		case 0: // two pairs, then a segment that does not end: seek to 10.00
			return sampledFrom(ts(0), 1, ts(5), ts(5), 2, ts(10), ts(10), 3, tEOT)
		case 1000: // ends with a lone timestamp: the rest is silence
			return sampledFrom(ts(0), 4, ts(3.5), ts(3.5), 5, ts(6))
		case 4000: // 25 s left: no pair at all, last timestamp 12.00
			return sampledFrom(ts(0), 6, ts(12))
		}
		return nil
	}}
	var streamed []Segment
	o := transcribeOpts()
	o.OnSegment = func(s Segment) { streamed = append(streamed, s) }
	tr, err := Transcribe(context.Background(), a, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 3000}, {1000, 3000}, {4000, 2500}}; !slices.Equal(a.encoded, want) {
		t.Errorf("windows %v, want %v", a.encoded, want)
	}
	type seg struct {
		start, end float64
		text       string
	}
	var got []seg
	for _, s := range tr.Segments {
		got = append(got, seg{s.Start, s.End, s.Text})
	}
	want := []seg{
		{0, 5, " w1"}, {5, 10, " w2"}, // window at 0 s
		{10, 13.5, " w4"}, {13.5, 16, " w5"}, // window at 10 s
		{40, 52, " w6"}, // window at 40 s
	}
	if len(got) != len(want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i].start-want[i].start) > 1e-9 || math.Abs(got[i].end-want[i].end) > 1e-9 || got[i].text != want[i].text {
			t.Errorf("segment %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(streamed) != len(tr.Segments) || streamed[4].ID != 4 {
		t.Errorf("OnSegment saw %d segments", len(streamed))
	}
	if tr.Text != " w1 w2 w4 w5 w6" || tr.Language != "en" {
		t.Errorf("text %q, language %q", tr.Text, tr.Language)
	}
	if s := tr.Segments[2]; s.Seek != 1000 || !slices.Equal(s.Tokens, []int32{ts(0), 4, ts(3.5)}) {
		t.Errorf("segment 2: seek %d tokens %v", s.Seek, s.Tokens)
	}
	// The second window is prompted with the first one's segments, and the
	// third with both.
	prompt := []int32{tStartOfPrev, ts(0), 1, ts(5), ts(5), 2, ts(10)}
	if got := a.decs[1].starts[0]; !slices.Equal(got[:len(prompt)], prompt) {
		t.Errorf("second window's prefix %v, want it to start with %v", got, prompt)
	}
}

func TestSplitSegments(t *testing.T) {
	for _, c := range []struct {
		name    string
		tokens  []int32
		starts  []int
		advance int
	}{
		{"pairs then unfinished", []int32{ts(0), 1, ts(1), ts(1), 2, ts(2), 3}, []int{0, -1}, 0},
		{"lone timestamp ending", []int32{ts(0), 1, ts(1), ts(1), 2, ts(2)}, []int{0, 50}, 3000},
		{"no timestamps", []int32{1, 2, 3}, []int{-1}, 3000},
		{"one pair only", []int32{ts(0.5), 1, ts(2), ts(2)}, []int{25}, 200},
	} {
		segs, adv := splitSegments(c.tokens, tTS, 3000)
		var starts []int
		for _, s := range segs {
			starts = append(starts, s.start)
		}
		if c.name == "pairs then unfinished" {
			c.starts, c.advance = []int{0}, 100 // the unfinished part is dropped; seek to 1.00 s
		}
		if !slices.Equal(starts, c.starts) || adv != c.advance {
			t.Errorf("%s: starts %v advance %d, want %v %d", c.name, starts, adv, c.starts, c.advance)
		}
	}
}

// TestNoTimestampsWindows: without timestamps each window is one segment
// and the seek moves a whole window.
func TestNoTimestampsWindows(t *testing.T) {
	a := &fakeAudio{frames: 4200, windows: func(seek, frames int) model { return sampledFrom(int32(1 + seek/3000)) }}
	o := transcribeOpts()
	o.Timestamps = false
	tr, err := Transcribe(context.Background(), a, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Segments) != 2 || tr.Segments[1].Start != 30 || tr.Segments[1].End != 42 || tr.Text != " w1 w2" {
		t.Errorf("segments %+v, text %q", tr.Segments, tr.Text)
	}
}

// loopModel repeats w1 forever at temperature 0 (EOT a close second), which
// compresses far beyond 2.4; sampling soon picks EOT.
func loopModel(seq []int32, l []float32) {
	for i := range l {
		l[i] = -20
	}
	l[1], l[tEOT] = 1.0, 0.9
	if slices.Index(seq, tSOT)+4 == len(seq) { // first position: blank EOT suppressed anyway
		l[1] = 5
	}
}

func TestTemperatureFallback(t *testing.T) {
	a := &fakeAudio{frames: 1000, windows: func(int, int) model { return loopModel }}
	o := transcribeOpts()
	o.Timestamps = false
	tr, err := Transcribe(context.Background(), a, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	d := a.decs[0]
	if len(d.starts) < 2 {
		t.Fatalf("decoded %d times, want a fallback", len(d.starts))
	}
	s := tr.Segments[0]
	if s.Temperature == 0 || s.CompressionRatio > 2.4 {
		t.Errorf("kept temperature %v with compression ratio %v", s.Temperature, s.CompressionRatio)
	}
	// At temperature 0 alone, the loop is what comes out.
	o.Temperatures = []float64{0}
	tr, err = Transcribe(context.Background(), &fakeAudio{frames: 1000, windows: func(int, int) model { return loopModel }}, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.Segments[0]; s.CompressionRatio <= 2.4 || len(s.Tokens) != TextContext/2 {
		t.Errorf("greedy loop: ratio %v, %d tokens", s.CompressionRatio, len(s.Tokens))
	}
	// The same seed samples the same text.
	o.Temperatures = []float64{0.6}
	o.Seed = 42
	var texts []string
	for range 2 {
		tr, err := Transcribe(context.Background(), &fakeAudio{frames: 1000, windows: func(int, int) model { return loopModel }}, fakeVocab{}, o)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, tr.Text)
	}
	if texts[0] != texts[1] {
		t.Errorf("same seed, different samples: %q, %q", texts[0], texts[1])
	}
}

func TestNeedsFallback(t *testing.T) {
	o := transcribeOpts()
	for _, c := range []struct {
		cr, lp, ns float64
		want       bool
	}{
		{1.5, -0.5, 0.1, false},
		{2.5, -0.5, 0.1, true},  // repetitive
		{1.5, -1.5, 0.1, true},  // improbable
		{1.5, -1.5, 0.7, false}, // silence: improbable and no speech
		{2.5, -0.5, 0.9, true},  // no speech but probable: still repetitive
	} {
		if got := needsFallback(&Result{CompressionRatio: c.cr, AvgLogProb: c.lp, NoSpeechProb: c.ns}, &o); got != c.want {
			t.Errorf("%+v: fallback %v", c, got)
		}
	}
	o.CompressionRatioThreshold, o.LogProbThreshold = math.NaN(), math.NaN()
	if needsFallback(&Result{CompressionRatio: 9, AvgLogProb: -9}, &o) {
		t.Error("NaN thresholds did not disable the checks")
	}
}

// TestNoSpeechSkip: a window the model finds silent is skipped whole.
func TestNoSpeechSkip(t *testing.T) {
	silent := func(seq []int32, l []float32) {
		fill(l[:tTS], 0) // flat text: improbable
		fill(l[tTS:], -30)
		l[tTS] = 0
		l[tNoSpeech] = 20
	}
	a := &fakeAudio{frames: 5000, windows: func(seek, frames int) model {
		if seek == 0 {
			return silent
		}
		return sampledFrom(ts(0), 3, ts(1))
	}}
	tr, err := Transcribe(context.Background(), a, fakeVocab{}, transcribeOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Segments) != 1 || tr.Segments[0].Start != 30 || tr.Segments[0].Text != " w3" {
		t.Errorf("segments %+v", tr.Segments)
	}
	if len(a.decs[0].starts) != 1 {
		t.Errorf("silent window decoded %d times, want once (silence needs no fallback)", len(a.decs[0].starts))
	}
}

// TestTranscribeDetectsLanguageOnce: detection runs on the first window,
// whose encoding is then reused.
func TestTranscribeDetectsLanguageOnce(t *testing.T) {
	a := &fakeAudio{frames: 800, windows: func(int, int) model {
		return func(seq []int32, l []float32) {
			sampledFrom(ts(0), 3, ts(2))(seq, l)
			if len(seq) == 1 {
				l[tFR] = 30
			}
		}
	}}
	o := transcribeOpts()
	o.Language = ""
	tr, err := Transcribe(context.Background(), a, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Language != "fr" || tr.LanguageProbs["fr"] < 0.99 || len(a.encoded) != 1 {
		t.Errorf("language %q probs %v, %d encodings", tr.Language, tr.LanguageProbs, len(a.encoded))
	}
	if got := a.decs[0].starts[1][:3]; !slices.Equal(got, []int32{tSOT, tFR, tTranscribe}) {
		t.Errorf("decoding prefix %v", got)
	}
}

func TestTranscribeErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Transcribe(ctx, &fakeAudio{}, fakeVocab{}, transcribeOpts()); !errors.Is(err, ErrNoAudio) {
		t.Errorf("empty audio: %v", err)
	}
	o := transcribeOpts()
	o.Language = "xx"
	a := &fakeAudio{frames: 100, windows: func(int, int) model { return sampledFrom(1) }}
	if _, err := Transcribe(ctx, a, fakeVocab{}, o); err == nil || !strings.Contains(err.Error(), "xx") {
		t.Errorf("unknown language: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Transcribe(cancelled, a, fakeVocab{}, transcribeOpts()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	o = transcribeOpts()
	o.Temperatures = nil
	if _, err := Transcribe(ctx, a, fakeVocab{}, o); err == nil {
		t.Error("no temperatures accepted")
	}
}

// TestSampling: sampling follows softmax(logits/T): with two tokens at
// logits 0 and log 3, T=1 picks the second three times as often.
func TestSampling(t *testing.T) {
	row := make([]float32, fakeSize)
	fill(row, negInf)
	row[1], row[2] = 0, float32(math.Log(3))
	sp := fakeVocab{}.Specials()
	counts := map[int32]int{}
	for _, temp := range []float64{1, 0.5} {
		clear(counts)
		o := Options{Language: "en", Temperature: temp, Seed: 1}
		tk, err := newTask(&countingDecoder{row: row}, fakeSize, &sp, o, "en", rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		const n = 20000
		for range n {
			counts[tk.sample(row)]++
		}
		want := 0.75 // T=1: 3/(1+3)
		if temp == 0.5 {
			want = 0.9 // 9/(1+9)
		}
		if got := float64(counts[2]) / n; math.Abs(got-want) > 0.015 || counts[1]+counts[2] != n {
			t.Errorf("T=%v: share of the likelier token %v, want %v (counts %v)", temp, got, want, counts)
		}
	}
}

// TestBestOf: of several samples, the one with the best length-normalised
// log-probability is kept. w1 then EOT scores log(1/2); w2 w3 then EOT
// scores (log(1/2)+log(0.9))/2, better; w2 w4 is worse than both.
func TestBestOf(t *testing.T) {
	m := func(seq []int32, l []float32) {
		fill(l, negInf)
		switch {
		case len(seq) == 4:
			l[1], l[2] = 0, 0
		case len(seq) == 5 && seq[4] == 2:
			l[3], l[4] = float32(math.Log(0.9)), float32(math.Log(0.1))
		default:
			l[tEOT] = 0
		}
	}
	o := Options{Language: "en", Temperature: 1, BestOf: 8, Seed: 3}
	d := &fakeDecoder{m: m}
	res, err := Decode(context.Background(), d, fakeVocab{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.seqs) != 8 {
		t.Errorf("%d samples, want 8", len(d.seqs))
	}
	want := (math.Log(0.5) + math.Log(0.9)) / 3
	if !slices.Equal(res.Tokens, []int32{2, 3}) || math.Abs(res.AvgLogProb-want) > 1e-6 {
		t.Errorf("kept %v (avg %v), want [2 3] (avg %v)", res.Tokens, res.AvgLogProb, want)
	}
}

// shortAudio is a PaddedAudio: its Encode gives the short window's model,
// EncodePadded the padded one's (or nothing, when full is false: the
// window was encoded padded already).
type shortAudio struct {
	fakeAudio
	short, padded model
	full          bool
	retries       int
}

func (a *shortAudio) Encode(ctx context.Context, seek, frames int) (Decoder, error) {
	a.windows = func(int, int) model { return a.short }
	return a.fakeAudio.Encode(ctx, seek, frames)
}

func (a *shortAudio) EncodePadded(ctx context.Context, seek, frames int) (Decoder, error) {
	if !a.full {
		return nil, nil
	}
	a.retries++
	a.windows = func(int, int) model { return a.padded }
	return a.fakeAudio.Encode(ctx, seek, frames)
}

// TestPaddedRetry: a shortened window whose result loops or has a
// timestamp past its audio is decoded again padded; a good result, or a
// window with nothing to redo, is not.
func TestPaddedRetry(t *testing.T) {
	good := sampledFrom(ts(0), 2, 3, ts(1))
	for _, c := range []struct {
		name        string
		short       model
		full        bool
		timestamps  bool
		retries     int
		text        string
		temperature bool    // the result came from above temperature 0
		logProb     float64 // LogProbThreshold, when not 0: 1 fails every result
		loopsOnly   bool    // RetryLoopsOnly
	}{
		{"good", good, true, true, 0, " w2 w3", false, 0, false},
		{"loop", loopModel, true, false, 1, " w2 w3", false, 0, false},
		{"past the end", sampledFrom(ts(0), 4, ts(9.1)), true, true, 1, " w2 w3", false, 0, false},
		{"a second past the end is fine", sampledFrom(ts(0), 4, ts(9)), true, true, 0, " w4", false, 0, false},
		{"loop, nothing to redo", loopModel, false, false, 0, "", true, 0, false},
		{"improbable", good, true, true, 1, " w2 w3", false, 1, false},
		{"improbable, RetryLoopsOnly", sampledFrom(ts(0), 4, ts(1)), true, true, 0, " w4", false, 1, true},
		{"loop, RetryLoopsOnly", loopModel, true, false, 1, " w2 w3", false, 0, true},
		{"closing past the end, RetryLoopsOnly", sampledFrom(ts(0), 4, ts(9.1)), true, true, 0, " w4", false, 0, true},
		{"text past the end, RetryLoopsOnly", sampledFrom(ts(0), 4, ts(9.1), ts(9.1), 2, ts(9.5)), true, true, 1, " w2 w3", false, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &shortAudio{fakeAudio: fakeAudio{frames: 800}, short: c.short, padded: good, full: c.full}
			o := transcribeOpts()
			o.Timestamps = c.timestamps
			if c.logProb != 0 {
				o.LogProbThreshold = c.logProb
				o.Temperatures = o.Temperatures[:1]
			}
			o.RetryLoopsOnly = c.loopsOnly
			tr, err := Transcribe(context.Background(), a, fakeVocab{}, o)
			if err != nil {
				t.Fatal(err)
			}
			if a.retries != c.retries || tr.Segments[0].PaddedRetry != (c.retries > 0) {
				t.Errorf("retried %d times (segment says %v), want %d", a.retries, tr.Segments[0].PaddedRetry, c.retries)
			}
			if c.text != "" && tr.Text != c.text {
				t.Errorf("text %q, want %q", tr.Text, c.text)
			}
			if got := tr.Segments[0].Temperature > 0; got != c.temperature {
				t.Errorf("temperature %v", tr.Segments[0].Temperature)
			}
		})
	}
}
