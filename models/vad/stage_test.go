package vad_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
)

// TestStagePipeline runs silero_test.wav through a pipeline in frames of
// random sizes: the speech segments equal the reference segments and carry
// exactly their samples.
func TestStagePipeline(t *testing.T) {
	m := testModel(t)
	samples := goldenAudio(t, "silero_test")
	r := rand.New(rand.NewPCG(3, 4))
	off := 0
	read := func(context.Context) ([]float32, error) {
		if off >= len(samples) {
			return nil, nil
		}
		n := min(1+r.IntN(3000), len(samples)-off)
		buf := samples[off : off+n]
		off += n
		if off == len(samples) {
			return buf, io.EOF
		}
		return buf, nil
	}
	st, err := m.NewStage(ctx(), "vad", 16000, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []vad.Speech
	p := pipeline.New("vad-test")
	pcm := pipeline.From(p, stage.FromSamples("wav", 16000, read))
	pipeline.To(pipeline.Then(pcm, st), stage.Collect("collect", &got))
	if err := p.Run(ctx()); err != nil {
		t.Fatal(err)
	}
	want := referenceCases[0].want
	if len(got) != len(want) {
		t.Fatalf("%d segments, want %d", len(got), len(want))
	}
	for i, s := range got {
		if s.Segment != want[i] {
			t.Errorf("segment %d: %v, want %v", i, s.Segment, want[i])
		}
		if s.Rate != 16000 || !slices.Equal(s.Audio, samples[s.Start:s.End]) {
			t.Errorf("segment %d: audio (%d samples at %d Hz) is not samples[%d:%d]", i, len(s.Audio), s.Rate, s.Start, s.End)
		}
	}
}

// TestProcessorFrames drives the processor by hand: offsets, entry times,
// early emission, flush of an open segment, wrong sample rate.
func TestProcessorFrames(t *testing.T) {
	m := testModel(t)
	samples := goldenAudio(t, "jfk")
	p, err := m.NewProcessor(ctx(), 16000, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []stage.Frame[vad.Speech]
	var emittedAt []int
	emit := func(f stage.Frame[vad.Speech]) error {
		got = append(got, f)
		return nil
	}
	t0 := time.Unix(1000, 0)
	const frame = 1600 // 100 ms
	// Cut the clip at 9 s (inside the last phrase) so Flush must close it.
	cut := samples[:9*16000]
	for i := 0; i*frame < len(cut); i++ {
		f := stage.Frame[[]float32]{Offset: 5000 + int64(i*frame), Rate: 16000, Entered: t0.Add(time.Duration(i) * time.Millisecond), Payload: cut[i*frame : min((i+1)*frame, len(cut))]}
		if err := p.Process(ctx(), f, emit); err != nil {
			t.Fatal(err)
		}
		for len(emittedAt) < len(got) {
			emittedAt = append(emittedAt, (i+1)*frame)
		}
	}
	if err := p.Flush(ctx(), emit); err != nil {
		t.Fatal(err)
	}
	probs, err := m.Probs(ctx(), cut, 16000)
	if err != nil {
		t.Fatal(err)
	}
	want, err := vad.Segments(probs, int64(len(cut)), 16000, 512, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) < 3 {
		t.Fatalf("%d segments, want %d (≥ 3)", len(got), len(want))
	}
	for i, f := range got {
		s := f.Payload
		if s.Segment != want[i] || f.Offset != 5000+s.Start || f.Rate != 16000 {
			t.Errorf("segment %d: %v at offset %d, want %v at %d", i, s.Segment, f.Offset, want[i], 5000+want[i].Start)
		}
		if wantEntered := t0.Add(time.Duration(s.Start/frame) * time.Millisecond); !f.Entered.Equal(wantEntered) {
			t.Errorf("segment %d: entered %v, want %v (the frame holding its start)", i, f.Entered, wantEntered)
		}
		if !slices.Equal(s.Audio, cut[s.Start:s.End]) {
			t.Errorf("segment %d: wrong audio", i)
		}
	}
	// Closed segments leave within 100 ms of silence + a chunk + a frame.
	for i := 0; i < len(want)-1; i++ {
		if lag := emittedAt[i] - int(want[i].End); lag > 1600+512+frame {
			t.Errorf("segment %d emitted %d samples after its end", i, lag)
		}
	}
	if last := got[len(got)-1].Payload; last.End != int64(len(cut)) {
		t.Errorf("the open segment was flushed as %v, want it to end at %d", last.Segment, len(cut))
	}

	p2, err := m.NewProcessor(ctx(), 16000, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	err = p2.Process(ctx(), stage.Frame[[]float32]{Rate: 44100, Payload: make([]float32, 100)}, emit)
	if !errors.Is(err, vad.ErrSampleRate) {
		t.Errorf("44.1 kHz frame: %v, want ErrSampleRate", err)
	}
}

// TestProcessorCancel: an emit that fails (the pipeline is cancelled) stops
// the processor with that error.
func TestProcessorCancel(t *testing.T) {
	m := testModel(t)
	samples := goldenAudio(t, "jfk")
	p, err := m.NewProcessor(ctx(), 16000, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop := errors.New("cancelled")
	err = p.Process(ctx(), stage.Frame[[]float32]{Rate: 16000, Payload: samples}, func(stage.Frame[vad.Speech]) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("Process: %v, want the emit error", err)
	}
}
