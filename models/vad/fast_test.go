package vad_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
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

// randomAudio makes n samples of synthetic audio of one kind, from seed:
// the fast path's products see inputs no recording has (full-scale noise,
// clipping, a DC offset, digital silence, bursts that flip the LSTM's
// state back and forth).
func randomAudio(kind string, seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 17))
	x := make([]float32, n)
	switch kind {
	case "silence":
	case "dc":
		for i := range x {
			x[i] = 0.25
		}
	case "noise 1e-3", "noise 0.1", "noise 1":
		amp := map[string]float64{"noise 1e-3": 1e-3, "noise 0.1": 0.1, "noise 1": 1}[kind]
		for i := range x {
			x[i] = float32(amp * (2*r.Float64() - 1))
		}
	case "clipped":
		for i := range x {
			x[i] = float32(max(-1, min(1, 3*r.NormFloat64())))
		}
	case "chirp":
		for i := range x {
			t := float64(i) / 16000
			x[i] = float32(0.5 * math.Sin(2*math.Pi*(100+1500*t)*t))
		}
	case "bursts":
		on := false
		for i := range x {
			if i%4000 == 0 {
				on = r.IntN(2) == 0
			}
			if on {
				x[i] = float32(0.3 * r.NormFloat64())
			}
		}
	default:
		panic("randomAudio: unknown kind " + kind)
	}
	return x
}

// TestFastMatchesGraphRandom is TestFastMatchesGraph on synthetic audio at
// both rates, lengths that end in a partial chunk included, and holds both
// float32 paths against a float64 evaluation of the same weights
// (Probs64): the chirp drives the LSTM's cell state to |c| ≈ 52, where
// rounding carried from chunk to chunk shows most.
func TestFastMatchesGraphRandom(t *testing.T) {
	fast, ref := fastModel(t), testGraphModel(t)
	for _, tc := range []struct {
		kind string
		rate int
		n    int // samples
	}{
		{"silence", vad.Rate16k, 40 * 512},
		{"dc", vad.Rate16k, 40 * 512},
		{"noise 1e-3", vad.Rate16k, 100 * 512},
		{"noise 0.1", vad.Rate16k, 100*512 + 77},
		{"noise 1", vad.Rate16k, 100 * 512},
		{"clipped", vad.Rate16k, 100 * 512},
		{"chirp", vad.Rate16k, 150 * 512},
		{"bursts", vad.Rate16k, 300*512 + 5},
		{"noise 0.1", vad.Rate8k, 100 * 256},
		{"bursts", vad.Rate8k, 300*256 + 100},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.kind, tc.rate), func(t *testing.T) {
			x := randomAudio(tc.kind, uint64(tc.n), tc.n)
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
			t.Logf("%d chunks: max |p_fast − p_graph| = %.2g (chunk %d)", len(got), worst, at)
			p64, err := vad.Probs64(ref, x, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			var ef, eg float64
			for i := range p64 {
				ef = max(ef, math.Abs(float64(got[i])-p64[i]))
				eg = max(eg, math.Abs(float64(want[i])-p64[i]))
			}
			t.Logf("max |p − p_float64|: fast %.2g, graph %.2g", ef, eg)
			if !(ef <= fastTolerance) {
				t.Errorf("the fast path strays %.2g from the float64 evaluation (> %g); the compiled program %.2g", ef, fastTolerance, eg)
			}
			if !(worst <= fastTolerance) {
				t.Errorf("chunk %d: fast %.7f, graph %.7f: |d| = %.2g > %g", at, got[at], want[at], worst, fastTolerance)
			}
		})
	}
}

// TestFastSegmentsMatchGraph: the segments of the golden clips are the
// same on both paths under every option set of the reference cases, and
// on the 8 kHz branch: probabilities a few 1e-6 apart must not move a
// boundary.
func TestFastSegmentsMatchGraph(t *testing.T) {
	fast, ref := fastModel(t), testGraphModel(t)
	rs, err := resample.New(16000, vad.Rate8k)
	if err != nil {
		t.Fatal(err)
	}
	jfk8k := rs.Flush(rs.Process(nil, goldenAudio(t, "jfk")))
	for _, c := range referenceCases {
		for _, rate := range []int{vad.Rate16k, vad.Rate8k} {
			if rate == vad.Rate8k && c.clip != "jfk" {
				continue
			}
			t.Run(fmt.Sprintf("%s@%d/%s", c.clip, rate, c.name), func(t *testing.T) {
				x := goldenAudio(t, c.clip)
				if rate == vad.Rate8k {
					x = jfk8k
				}
				o := vad.DefaultOptions()
				c.opt(&o)
				got, err := fast.Detect(ctx(), x, rate, o)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Detect(ctx(), x, rate, o)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("segments differ:\nfast  %v\ngraph %v", got, want)
				}
				if len(want) == 0 {
					t.Errorf("no segments: the comparison tests nothing")
				}
			})
		}
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
