package vad_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/models/vad"
)

// fastTolerance bounds |p_fast − p_graph| per chunk: the two paths add the
// same products in a different order, and the LSTM carries the rounding
// from chunk to chunk.
const fastTolerance = 1e-5

// fastModel returns the model with its fast path, skipping loudly where
// this CPU runs the compiled programs anyway.
func fastModel(t testing.TB) *vad.Model {
	t.Helper()
	m := testModel(t)
	if m.Path() == "graph" {
		t.Skipf("SKIPPED: no fast path on this machine (%s): nothing to compare", m.Path())
	}
	return m
}

// clip reads a 16 kHz mono WAV under ../shared.
func clip(t *testing.T, rel string) []float32 {
	t.Helper()
	c, err := audio.ReadWAVFile(filepath.Join(sharedDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != 16000 {
		t.Fatalf("%s: %d Hz", rel, c.SampleRate)
	}
	return c.Samples
}

// TestFastMatchesGraph scores real clips on the fast path and on the
// compiled programs (the reference) and compares every chunk's
// probability, at both rates: the golden clips, ../shared/data's, and
// jfk resampled to 8 kHz.
func TestFastMatchesGraph(t *testing.T) {
	fast, ref := fastModel(t), testGraphModel(t)
	cases := []struct {
		wav  string // under ../shared
		rate int    // 8000: resampled from 16 kHz
	}{
		{"golden/audio/jfk.wav", vad.Rate16k},
		{"golden/audio/silero_test.wav", vad.Rate16k},
		{"golden/audio/goforward.wav", vad.Rate16k},
		{"golden/audio/cards_001.wav", vad.Rate16k},
		{"golden/audio/cards_003.wav", vad.Rate16k},
		{"golden/audio/cards_005.wav", vad.Rate16k},
		{"data/silero-test.wav", vad.Rate16k},
		{"data/jfk.wav", vad.Rate16k},
		{"golden/audio/jfk.wav", vad.Rate8k},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s@%d", tc.wav, tc.rate), func(t *testing.T) {
			x := clip(t, tc.wav)
			if tc.rate != vad.Rate16k {
				rs, err := resample.New(16000, tc.rate)
				if err != nil {
					t.Fatal(err)
				}
				x = rs.Flush(rs.Process(nil, x))
			}
			got, err := fast.Probs(ctx(), x, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Probs(ctx(), x, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d chunks on the fast path, %d on the graph", len(got), len(want))
			}
			worst, at := maxDiff(got, want)
			t.Logf("%d chunks at %d Hz: max |p_fast − p_graph| = %.2g (chunk %d)", len(got), tc.rate, worst, at)
			if !(worst <= fastTolerance) {
				t.Errorf("chunk %d: fast %.7f, graph %.7f: |d| = %.2g > %g", at, got[at], want[at], worst, fastTolerance)
			}
		})
	}
}

// TestFastBatchMatchesGraph: a fast batch of streams (each reading its own
// stretch of a clip, so states diverge) against the compiled batch of the
// same size, over two resets, at several sizes around the four-row blocks
// of the products.
func TestFastBatchMatchesGraph(t *testing.T) {
	fast, ref := fastModel(t), testGraphModel(t)
	chunks := benchChunks(t)
	for _, n := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("streams=", n), func(t *testing.T) {
			fb, err := fast.NewBatch(ctx(), vad.Rate16k, n)
			if err != nil {
				t.Fatal(err)
			}
			defer fb.Close()
			gb, err := ref.NewBatch(ctx(), vad.Rate16k, n)
			if err != nil {
				t.Fatal(err)
			}
			defer gb.Close()
			in := make([][]float32, n)
			got, want := make([]float32, n), make([]float32, n)
			var worst float64
			for range 2 {
				for step := range 60 {
					for i := range in {
						in[i] = chunks[(i*41+step)%len(chunks)]
					}
					if err := fb.Probs(ctx(), in, got); err != nil {
						t.Fatal(err)
					}
					if err := gb.Probs(ctx(), in, want); err != nil {
						t.Fatal(err)
					}
					d, _ := maxDiff(got, want)
					worst = max(worst, d)
				}
				if err := fb.Reset(ctx()); err != nil {
					t.Fatal(err)
				}
				if err := gb.Reset(ctx()); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d streams × 120 chunks: max |p_fast − p_graph| = %.2g", n, worst)
			if !(worst <= fastTolerance) {
				t.Errorf("fast batch differs from the compiled one by %.2g > %g", worst, fastTolerance)
			}
		})
	}
}

// TestFastAllocs: on the fast path neither a detector's chunk nor a
// batch's round allocates.
func TestFastAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	m := fastModel(t)
	chunks := benchChunks(t)
	d, err := m.NewDetector(ctx(), vad.Rate16k)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	bt, err := m.NewBatch(ctx(), vad.Rate16k, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	in, out := make([][]float32, 8), make([]float32, 8)
	i := 0
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Detector.Prob", func() {
			if _, err := d.Prob(ctx(), chunks[i%len(chunks)]); err != nil {
				t.Fatal(err)
			}
		}},
		{"Batch.Probs (8 streams)", func() {
			for j := range in {
				in[j] = chunks[(i+j)%len(chunks)]
			}
			if err := bt.Probs(ctx(), in, out); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		if n := testing.AllocsPerRun(200, func() { tc.f(); i++ }); n != 0 {
			t.Errorf("%s allocates %.2f times per call", tc.name, n)
		}
	}
}

func maxDiff(got, want []float32) (worst float64, at int) {
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) || d > worst {
			worst, at = d, i
		}
	}
	return worst, at
}
