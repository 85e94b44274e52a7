package listen

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/stage"
)

// TestLastSegmentEnd: the cut is after the last timestamp that follows
// text (a segment's closing one), never inside a segment or after a
// lone opening timestamp.
func TestLastSegmentEnd(t *testing.T) {
	const tb, eot = 1000, 900
	for _, c := range []struct {
		name  string
		ids   []int32
		n     int
		steps int32
	}{
		{"empty", nil, 0, 0},
		{"open segment", []int32{1000, 5, 6}, 0, 0},
		{"one closed segment", []int32{1000, 5, 6, 1100}, 4, 100},
		{"closed, then the next one's start", []int32{1000, 5, 1100, 1110}, 3, 100},
		{"closed, then an open one", []int32{1000, 5, 1100, 1110, 7, 8}, 3, 100},
		{"two closed", []int32{1000, 5, 1100, 1110, 7, 1200}, 6, 200},
		{"no timestamps", []int32{5, 6, 7}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n, steps := lastSegmentEnd(c.ids, tb, eot); n != c.n || steps != c.steps {
				t.Errorf("lastSegmentEnd(%v) = %d, %d; want %d, %d", c.ids, n, steps, c.n, c.steps)
			}
		})
	}
}

// TestShiftTimes: timestamps move back, never before <|0.00|>; text
// stays.
func TestShiftTimes(t *testing.T) {
	const tb = 1000
	for _, c := range []struct {
		name  string
		ids   []int32
		steps int32
		want  []int32
	}{
		{"pair after the cut", []int32{1100, 5, 6, 1150}, 100, []int32{1000, 5, 6, 1050}},
		{"earlier than the cut", []int32{1090, 5, 1120}, 100, []int32{1000, 5, 1020}},
		{"text only", []int32{5, 6}, 100, []int32{5, 6}},
		{"none", nil, 3, []int32{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.ids)
			if got := shiftTimes(in, tb, c.steps); !slices.Equal(got, c.want) {
				t.Errorf("shiftTimes(%v, %d) = %v, want %v", c.ids, c.steps, got, c.want)
			}
			if !slices.Equal(in, c.ids) {
				t.Errorf("the tokens given were changed: %v", in)
			}
		})
	}
}

// TestTokenSegments: committed tokens before a moved origin become
// segments at their closing timestamps, in the input's seconds, and
// spell the same text.
func TestTokenSegments(t *testing.T) {
	tok := needTiny(t).whisp.Tokenizer()
	tb := tok.Specials().TimestampBegin
	enc := encoder(t, tok)
	one := slices.Concat([]int32{tb}, enc(" And so my fellow Americans."), []int32{tb + 100})
	two := slices.Concat([]int32{tb + 110}, enc(" Ask not."), []int32{tb + 150})
	for _, c := range []struct {
		name   string
		ids    []int32
		origin float64
		want   []Segment
	}{
		{"two segments", slices.Concat(one, two), 10, []Segment{
			{Start: 10, End: 12, Text: " And so my fellow Americans.", Tokens: one},
			{Start: 12.2, End: 13, Text: " Ask not.", Tokens: two}}},
		{"an open one last", slices.Concat(one, two[:len(two)-1]), 0, []Segment{
			{Start: 0, End: 2, Text: " And so my fellow Americans.", Tokens: one},
			{Start: 2.2, End: 2.5, Text: " Ask not.", Tokens: two[:len(two)-1]}}},
		{"none", nil, 3, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := tokenSegments(c.ids, c.origin, c.origin+2.5, tok, "en")
			if len(got) != len(c.want) {
				t.Fatalf("got %d segments %+v, want %d", len(got), got, len(c.want))
			}
			for i, g := range got {
				w := c.want[i]
				if g.Text != w.Text || !near(g.Start, w.Start) || !near(g.End, w.End) || !slices.Equal(g.Tokens, w.Tokens) || g.Language != "en" {
					t.Errorf("segment %d: got %+v\nwant %+v", i, g, w)
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestLiveWindow paces jfk.wav (11 s) as one VAD utterance (a 3-s
// minimum silence) into live runs whose readings' origin moves after 1 s of audio (at a pause) or 1.5 s (at a committed
// segment's end), with and without Finals at pauses: every reading then
// covers at most a few seconds (the bound's point: without it one
// covers up to a whole VAD utterance), committed text is never
// retracted across the moved origin (checkEvents), the Finals' segments
// are in order, and the final text stays within 3 words of offline.
func TestLiveWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("paces 12 s of audio per case")
	}
	tr := needTiny(t)
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", "jfk.wav"))
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
	short := windowing{atPause: SampleRate, atWord: SampleRate * 3 / 2}
	// One VAD utterance of the whole clip: its pauses are all shorter.
	long := DefaultVAD()
	long.MinSilence = 3 * time.Second
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"finals at pauses", Options{Language: "en", VAD: long}},
		{"finals at the VAD's close", Options{Language: "en", VAD: long, FinalPause: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			events, res, err := liveRunWindowed(ctx, tr, clip, c.o, short)
			if err != nil {
				t.Fatal(err)
			}
			got := checkEvents(t, events)
			for _, e := range events {
				t.Logf("%-7s u%d [%5.2f–%5.2f] %q | %q", e.Kind, e.Utterance, e.Start, e.End, e.Committed, e.Tentative)
				for i := 1; i < len(e.Segments); i++ {
					if e.Segments[i].Start < e.Segments[i-1].Start {
						t.Errorf("final %d: segment %d starts at %v, before %v", e.Utterance, i, e.Segments[i].Start, e.Segments[i-1].Start)
					}
				}
			}
			// A reading covers what was said since the last cut (atWord,
			// then the words left after it, a cadence step and the
			// padding): uncut, the Final at the VAD's close reads all 12 s.
			// The origin moves only past committed words: when decoding
			// is too slow to commit any (-race on 2 busy cores: 11
			// readings), there is no bound to check.
			switch limit := 9 * time.Second; {
			case res.Read.Count == 0:
				t.Error("no reading")
			case res.Partials < 15:
				t.Logf("only %d partials: decoding too slow to check the bound", res.Partials)
			case res.Read.Max > limit:
				t.Errorf("%d readings, the longest %v of audio; want at most %v", res.Read.Count, res.Read.Max, limit)
			}
			if r := wer.Compare(strings.Join(want, " "), got); r.Errors() > 3 {
				t.Errorf("final %q, offline %q: %d word errors", got, strings.Join(want, " "), r.Errors())
			}
			t.Logf("readings %d: p50 %v, max %v", res.Read.Count, res.Read.P50, res.Read.Max)
		})
	}
}

// TestWordCut: a cut between words leaves minWordsAfter committed words
// after it, lies halfway into the gap after the word before, and counts
// the tokens of the words before it.
func TestWordCut(t *testing.T) {
	tok := needTiny(t).whisp.Tokenizer()
	tb := tok.Specials().TimestampBegin
	enc := encoder(t, tok)
	head := enc(" And so my")
	ids := slices.Concat([]int32{tb}, head, enc(" fellow Americans, ask"))
	words := []Word{{Text: " And", End: 0.3}, {Text: " so", Start: 0.3, End: 0.6}, {Text: " my", Start: 0.6, End: 0.9},
		{Text: " fellow", Start: 1.1, End: 1.4}, {Text: " Americans,", Start: 1.4, End: 2}, {Text: " ask", Start: 2.2, End: 2.5}}
	for _, c := range []struct {
		name  string
		words []Word
		n     int
		steps int32
		ok    bool
	}{
		{"after my", words, 1 + len(head), 50, true},
		{"no gap after my: after so", slices.Concat(words[:2], []Word{{Text: " my", Start: 0.75, End: 0.9}, {Text: " fellow", Start: 0.9, End: 1.4}}, words[4:]), 1 + len(enc(" And so")), 34, true},
		{"no gap at all", []Word{{Text: " And", End: 0.3}, {Text: " so", Start: 0.3, End: 0.6}, {Text: " my", Start: 0.6, End: 0.9},
			{Text: " fellow", Start: 0.9, End: 1.4}, {Text: " Americans,", Start: 1.4, End: 2}, {Text: " ask", Start: 2, End: 2.5}}, 0, 0, false},
		{"too few words", words[:3], 0, 0, false},
		{"words that do not spell the tokens", append([]Word{{Text: " Ask", End: 0.3}}, words[1:]...), 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, steps, ok := wordCut(ids, c.words, tok)
			if n != c.n || steps != c.steps || ok != c.ok {
				t.Errorf("wordCut = %d, %d, %v; want %d, %d, %v", n, steps, ok, c.n, c.steps, c.ok)
			}
		})
	}
}

// TestOpenEnd: the prefix a piece continues after a Final at a pause
// loses the closing timestamps of that Final's last text and, unless
// keepEnd, its sentence end, not the tokens before least; ownStart then
// skips the punctuation the next reading begins with.
func TestOpenEnd(t *testing.T) {
	d := &liveDecoder{t: needTiny(t), words: map[int32]bool{}, puncts: map[int32]bool{}, ends: map[int32]bool{}}
	tok := d.t.whisp.Tokenizer()
	tb := tok.Specials().TimestampBegin
	enc := encoder(t, tok)
	global, q, comma := enc(" a 4% global"), enc("?"), enc(",")
	for _, c := range []struct {
		name    string
		ids     []int32
		least   int
		keepEnd bool
		want    int // tokens kept
	}{
		{"question", slices.Concat([]int32{tb}, global, q, []int32{tb + 100}), 0, false, 1 + len(global)},
		{"question kept", slices.Concat([]int32{tb}, global, q, []int32{tb + 100}), 0, true, 1 + len(global) + len(q)},
		{"no closing timestamp", slices.Concat([]int32{tb}, global, q), 0, false, 1 + len(global)},
		{"comma stays", slices.Concat([]int32{tb}, global, comma, []int32{tb + 100, tb + 101}), 0, false, 1 + len(global) + len(comma)},
		{"before least", slices.Concat([]int32{tb}, global, q, []int32{tb + 100}), 1 + len(global) + len(q), false, 1 + len(global) + len(q)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := d.openEnd(c.ids, c.least, c.keepEnd); got != c.want {
				t.Errorf("openEnd = %d, want %d", got, c.want)
			}
		})
	}
	wealth := enc(" wealth tax")
	for _, c := range []struct {
		name  string
		loose bool
		seq   []int32
		want  int
	}{
		{"loose: punctuation and timestamps skipped", true, slices.Concat(global, q, []int32{tb + 100, tb + 101}, wealth), len(global) + len(q) + 2},
		{"loose, own text first", true, slices.Concat(global, wealth), len(global)},
		{"not loose", false, slices.Concat(global, q, wealth), len(global)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &liveState{base: len(global), loose: c.loose}
			if got := d.ownStart(s, c.seq); got != c.want {
				t.Errorf("ownStart = %d, want %d", got, c.want)
			}
		})
	}
}

// TestTighten: a Final that read nothing after a prefix left open reads
// again after the strict one: the prefix, its base and the pause mark
// take the sentence end back.
func TestTighten(t *testing.T) {
	open := []int32{1000, 5, 6, 1010}
	strict := []int32{1000, 5, 6, 7, 1010}
	for _, c := range []struct {
		name           string
		mark, wantMark int
	}{
		{"mark at the open prefix's end", len(open), len(strict)},
		{"mark before", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &liveState{headLen: 2, base: 2 + len(open), loose: true, strict: slices.Clone(strict), mark: c.mark}
			s.agree.committed = slices.Clone(open)
			s.commits = make([]time.Time, s.base)
			s.tighten()
			if !slices.Equal(s.agree.committed, strict) || s.base != 2+len(strict) || s.loose || s.strict != nil || s.mark != c.wantMark || len(s.commits) != s.base {
				t.Errorf("after tighten: committed %v, base %d, loose %v, strict %v, mark %d, %d commit times", s.agree.committed, s.base, s.loose, s.strict, s.mark, len(s.commits))
			}
		})
	}
}

// TestLiveStaleMark: a piece that reads nothing after a prefix holding
// the last Final's sentence end and closing timestamp (tighten made it
// strict for a re-read) is final at its pause with those left out
// again, and the last Final's mark moves back with them. It used
// to stay past the shorter prefix: the next join then left the origin
// where it was (prevMark past mark), and a long reading's cut at the
// mark panicked the decoder ("slice bounds out of range [:9] with
// capacity 8", twice on the lecture) until cut clamped it. Here the
// piece has no audio, so the committed tokens are its whole reading.
func TestLiveStaleMark(t *testing.T) {
	tr := needTiny(t)
	tok := tr.whisp.Tokenizer()
	tb := tok.Specials().TimestampBegin
	enc := encoder(t, tok)
	strict := slices.Concat([]int32{tb}, enc(" Ask not"), enc("."), []int32{tb + 50})
	open := slices.Concat([]int32{tb}, enc(" Ask not"))
	for _, c := range []struct {
		name    string
		atPause int64 // windowing.atPause: 1 cuts at the mark
		// the group's head and prefix after the Final, and its marks
		wantHead, wantPrefix []int32
		wantPrev, wantMark   int
	}{
		{"short: no cut", 1 << 40, nil, open, len(open), len(open)},
		{"long: cut at the mark", 1, open, []int32{tb}, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &liveDecoder{t: tr, lang: "en", origins: &origins{}, gate: &gate{}, arr: &arrivals{}, states: map[int]*liveState{},
				words: map[int32]bool{}, puncts: map[int32]bool{}, ends: map[int32]bool{}, win: windowing{atPause: c.atPause, atWord: 1 << 40}}
			s := &liveState{group: 3, piece: 5, base: len(strict), mark: len(strict), markTo: 60 * tsSamples}
			s.agree.committed = slices.Clone(strict)
			s.commits = make([]time.Time, s.base)
			d.states[3] = s
			it := liveItem{kind: itemFinal, group: 3, utt: 5, to: 80 * tsSamples, piece: 60 * tsSamples, speech: 62 * tsSamples, speechEnd: 75 * tsSamples, atPause: true}
			var final []Event
			err := d.finish(context.Background(), it, func(f stage.Frame[Event]) error {
				final = append(final, f.Payload)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(final) != 1 || final[0].Committed != "" {
				t.Errorf("finals %+v, want one with no text", final)
			}
			if head := tokensOf(s.head); !slices.Equal(head, c.wantHead) || !slices.Equal(s.agree.committed, c.wantPrefix) {
				t.Errorf("head %v, prefix %v; want %v, %v", head, s.agree.committed, c.wantHead, c.wantPrefix)
			}
			if s.prevMark != c.wantPrev || s.mark != c.wantMark {
				t.Errorf("prevMark %d, mark %d; want %d, %d (prefix of %d)", s.prevMark, s.mark, c.wantPrev, c.wantMark, len(s.agree.committed))
			}
		})
	}
}

// encoder returns a function that encodes text with tok, failing t on an
// error.
func encoder(t *testing.T, tok *tokenizer.Tokenizer) func(string) []int32 {
	return func(s string) []int32 {
		t.Helper()
		ids, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
}
