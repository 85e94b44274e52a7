package listen

import (
	"context"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/vad"
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

// TestGrouper: with a span, consecutive segments join (the gaps silenced)
// until the next would reach past the span; without one, every segment is
// an utterance at once.
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
