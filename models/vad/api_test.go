package vad_test

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/tensorforge/forge/models/vad"
)

// TestBadInput: every misuse is an error naming the problem.
func TestBadInput(t *testing.T) {
	m := testModel(t)
	d, err := m.NewDetector(ctx(), vad.Rate16k)
	if err != nil {
		t.Fatal(err)
	}
	nan := make([]float32, 512)
	nan[7] = float32(math.NaN())
	inf := make([]float32, 512)
	inf[0] = float32(math.Inf(-1))
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"short chunk", first(d.Prob(ctx(), make([]float32, 500))), vad.ErrChunkSize},
		{"long chunk", first(d.Prob(ctx(), make([]float32, 576))), vad.ErrChunkSize},
		{"NaN sample", first(d.Prob(ctx(), nan)), vad.ErrNotFinite},
		{"infinite sample", first(d.Prob(ctx(), inf)), vad.ErrNotFinite},
		{"44.1 kHz detector", second(m.NewDetector(ctx(), 44100)), vad.ErrSampleRate},
		{"stereo", m.CheckFormat(16000, 2), vad.ErrNotMono},
		{"11 kHz", m.CheckFormat(11025, 1), vad.ErrSampleRate},
		{"empty clip", second(m.Probs(ctx(), nil, 16000)), vad.ErrEmptyAudio},
		{"empty clip, Detect", second(m.Detect(ctx(), []float32{}, 16000, vad.DefaultOptions())), vad.ErrEmptyAudio},
		{"bad options, Detect", second(m.Detect(ctx(), make([]float32, 512), 16000, vad.Options{})), vad.ErrBadOptions},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if err := m.CheckFormat(8000, 1); err != nil {
		t.Errorf("8 kHz mono: %v", err)
	}
	d.Close()
	if _, err := d.Prob(ctx(), make([]float32, 512)); !errors.Is(err, vad.ErrClosed) {
		t.Errorf("Prob after Close: %v, want ErrClosed", err)
	}
	d.Close() // twice is harmless
}

func first[T any](_ T, err error) error  { return err }
func second[T any](_ T, err error) error { return err }

// TestResetAndReuse: Reset (and a detector recycled through the model)
// starts from silence: the same chunks give the same probabilities as a
// fresh stream, bit for bit.
func TestResetAndReuse(t *testing.T) {
	m := testModel(t)
	chunks := benchChunks(t)[:40]
	run := func(d *vad.Detector) []float32 {
		var p []float32
		for _, c := range chunks {
			v, err := d.Prob(ctx(), c)
			if err != nil {
				t.Fatal(err)
			}
			p = append(p, v)
		}
		return p
	}
	d, err := m.NewDetector(ctx(), vad.Rate16k)
	if err != nil {
		t.Fatal(err)
	}
	want := run(d)
	if err := d.Reset(ctx()); err != nil {
		t.Fatal(err)
	}
	if got := run(d); !slices.Equal(got, want) {
		t.Errorf("after Reset: %v, want %v", got[:4], want[:4])
	}
	run(d) // leave state behind, then recycle
	d.Close()
	d2, err := m.NewDetector(ctx(), vad.Rate16k)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if got := run(d2); !slices.Equal(got, want) {
		t.Errorf("recycled detector: %v, want %v", got[:4], want[:4])
	}
}

// TestConcurrentStreams runs streams on many goroutines at once (run with
// -race): each gets exactly what it gets alone.
func TestConcurrentStreams(t *testing.T) {
	m := testModel(t)
	samples := goldenAudio(t, "jfk")
	want, err := m.Probs(ctx(), samples, vad.Rate16k)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Offset starts so streams are at different points.
			for range 1 + g%3 {
				got, err := m.Probs(ctx(), samples, vad.Rate16k)
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(got, want) {
					t.Errorf("goroutine %d: probabilities differ from a lone stream", g)
					return
				}
			}
		}()
	}
	wg.Wait()
}
