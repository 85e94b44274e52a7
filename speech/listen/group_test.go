package listen

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/stage"
)

func speechFrame(start, end int64) stage.Frame[vad.Speech] {
	audio := make([]float32, end-start)
	for i := range audio {
		audio[i] = float32(start + int64(i)) // the sample's own position
	}
	return stage.Frame[vad.Speech]{Offset: start, Rate: SampleRate, Entered: time.Unix(start, 0),
		Payload: vad.Speech{Segment: vad.Segment{Start: start, End: end}, Rate: SampleRate, Audio: audio}}
}

// TestGrouper: with a span, consecutive segments join until the next would
// reach past the span (gaps silenced without a history, short ones filled
// from it); without one, every segment is an utterance at once.
func TestGrouper(t *testing.T) {
	type got struct {
		start, n int64
		entered  int64
	}
	collect := func(g *grouper, segs ...stage.Frame[vad.Speech]) []got {
		var out []got
		emit := func(f stage.Frame[utterance]) error {
			u := f.Payload
			// the audio of a segment sits at its position in the utterance,
			// and gaps are zero
			for i, v := range u.samples {
				if v != 0 && int64(v) != u.start+int64(i) {
					t.Fatalf("utterance at %d: sample %d holds %v", u.start, i, v)
				}
			}
			out = append(out, got{u.start, int64(len(u.samples)), f.Entered.Unix()})
			return nil
		}
		for _, s := range segs {
			if err := g.Process(context.Background(), s, emit); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Flush(context.Background(), emit); err != nil {
			t.Fatal(err)
		}
		return out
	}
	segs := []stage.Frame[vad.Speech]{speechFrame(100, 200), speechFrame(300, 400), speechFrame(900, 1000), speechFrame(1200, 1300)}
	if out := collect(&grouper{span: 1000}, segs...); len(out) != 2 || out[0] != (got{100, 900, 100}) || out[1] != (got{1200, 100, 1200}) {
		t.Errorf("span 1000: %+v", out)
	}
	if out := collect(&grouper{span: 0}, segs...); len(out) != 4 || out[2] != (got{900, 100, 900}) {
		t.Errorf("live: %+v", out)
	}
	if out := collect(&grouper{span: 1000}); len(out) != 0 {
		t.Errorf("no speech: %+v", out)
	}
	// With the input's history, a gap up to fill gets the audio as
	// recorded (here: each sample its position); longer ones stay silent.
	h := newHistory(4000)
	pos := make([]float32, 1300)
	for i := range pos {
		pos[i] = float32(i)
	}
	h.add(pos)
	var filled []utterance
	g := &grouper{span: 1000, fill: 150, hist: h}
	emit := func(f stage.Frame[utterance]) error { filled = append(filled, f.Payload); return nil }
	for _, s := range segs[:3] {
		if err := g.Process(context.Background(), s, emit); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Flush(context.Background(), emit); err != nil {
		t.Fatal(err)
	}
	if len(filled) != 1 || len(filled[0].samples) != 900 {
		t.Fatalf("filled: %d utterances", len(filled))
	}
	for i, v := range filled[0].samples {
		p := int64(100 + i)
		inLongGap := p >= 400 && p < 900 // 500 samples > fill
		if want := float32(p); inLongGap && v != 0 || !inLongGap && v != want {
			t.Fatalf("sample at %d: %v (long gap %v)", p, v, inLongGap)
		}
	}
	bad := speechFrame(0, 10)
	bad.Payload.Rate = 8000
	if err := (&grouper{}).Process(context.Background(), bad, func(stage.Frame[utterance]) error { return nil }); err == nil {
		t.Error("8 kHz speech: no error")
	}
}

func TestCollector(t *testing.T) {
	c := &collector{}
	var out []utterance
	emit := func(f stage.Frame[utterance]) error { out = append(out, f.Payload); return nil }
	for i, n := range []int{3, 0, 5} {
		f := stage.Frame[[]float32]{Offset: int64(i * 10), Rate: SampleRate, Payload: make([]float32, n)}
		if err := c.Process(context.Background(), f, emit); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(context.Background(), emit); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || len(out[0].samples) != 8 || out[0].start != 0 {
		t.Errorf("collected %+v", out)
	}
	if err := (&collector{}).Flush(context.Background(), emit); err != nil || len(out) != 1 {
		t.Errorf("empty input emitted an utterance")
	}
}

// TestHistory: the ring returns what it holds, across its wrap, and
// refuses what has left it or not yet come.
func TestHistory(t *testing.T) {
	h := newHistory(10)
	for i := range 3 {
		h.add([]float32{float32(4 * i), float32(4*i + 1), float32(4*i + 2), float32(4*i + 3)}) // 0..11
	}
	for _, c := range []struct {
		from int64
		n    int
		ok   bool
	}{{2, 10, true}, {5, 4, true}, {8, 4, true}, {1, 2, false}, {10, 3, false}, {-1, 1, false}} {
		dst := make([]float32, c.n)
		ok := h.read(dst, c.from)
		if ok != c.ok {
			t.Errorf("read %d from %d: %v, want %v", c.n, c.from, ok, c.ok)
			continue
		}
		for i, v := range dst {
			if ok && v != float32(c.from+int64(i)) || !ok && v != 0 {
				t.Errorf("read %d from %d: sample %d is %v", c.n, c.from, i, v)
			}
		}
	}
	h.add(make([]float32, 25)) // more than it holds at once
	if h.end != 37 || !h.read(make([]float32, 10), 27) || h.read(make([]float32, 1), 26) {
		t.Errorf("after a long add: end %d", h.end)
	}
}

// TestNextPrompt: the prompt carries the text before, bounded, and starts
// over after a window decoded above temperature 0.5.
func TestNextPrompt(t *testing.T) {
	seg := func(temp float64, toks ...int32) decode.Segment {
		return decode.Segment{Temperature: temp, Tokens: toks}
	}
	if got := nextPrompt([]int32{1}, []decode.Segment{seg(0, 2, 3), seg(0.2, 4)}); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Errorf("carried: %v", got)
	}
	if got := nextPrompt([]int32{1}, []decode.Segment{seg(0, 2), seg(0.8, 3), seg(0, 4)}); !slices.Equal(got, []int32{4}) {
		t.Errorf("after a hot window: %v", got)
	}
	long := make([]int32, 3*maxPrompt)
	long[len(long)-1] = 7
	if got := nextPrompt(long, nil); len(got) != maxPrompt || got[len(got)-1] != 7 {
		t.Errorf("bounded: %d tokens", len(got))
	}
}
