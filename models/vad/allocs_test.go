package vad_test

import (
	"testing"

	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/stage"
)

// TestDetectorAllocs: scoring a chunk allocates nothing in steady state.
func TestDetectorAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	m := testModel(t)
	chunks := benchChunks(t)
	d, err := m.NewDetector(ctx(), vad.Rate16k)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := d.Prob(ctx(), chunks[i%len(chunks)]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("Detector.Prob allocates %.2f times per chunk", allocs)
	}
}

// TestProcessorAllocs: the stage body allocates nothing per frame while no
// segment is emitted (here: a long stretch of speech, then of silence).
func TestProcessorAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	m := testModel(t)
	speech := goldenAudio(t, "jfk")[86048 : 86048+16000] // inside a phrase
	p, err := m.NewProcessor(ctx(), vad.Rate16k, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	emit := func(stage.Frame[vad.Speech]) error { return nil }
	for _, buf := range [][]float32{speech, make([]float32, 16000)} {
		off := 0
		next := func() {
			f := stage.Frame[[]float32]{Rate: 16000, Payload: buf[off : off+400]}
			off = (off + 400) % (len(buf) - 400)
			if err := p.Process(ctx(), f, emit); err != nil {
				t.Fatal(err)
			}
		}
		for range 200 { // warm up: buffers reach their working size
			next()
		}
		if allocs := testing.AllocsPerRun(200, next); allocs != 0 {
			t.Errorf("Processor.Process allocates %.2f times per 400-sample frame", allocs)
		}
	}
}
