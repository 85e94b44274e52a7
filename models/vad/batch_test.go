package vad_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"
	"github.com/tensorforge/forge/models/vad"
)

// TestBatchMatchesDetectors: a batch of streams, each fed a different part
// of a real clip, gives every stream the probabilities its own Detector
// gives, chunk after chunk (state and context carried per stream), and
// Reset starts them all anew.
func TestBatchMatchesDetectors(t *testing.T) {
	m := testModel(t)
	chunks := benchChunks(t)
	const streams = 5
	bt, err := m.NewBatch(ctx(), vad.Rate16k, streams)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	dets := make([]*vad.Detector, streams)
	for i := range dets {
		if dets[i], err = m.NewDetector(ctx(), vad.Rate16k); err != nil {
			t.Fatal(err)
		}
		defer dets[i].Close()
	}
	got := make([]float32, streams)
	in := make([][]float32, streams)
	var worst float64
	for round := range 2 {
		for step := range 40 {
			for i := range streams {
				in[i] = chunks[(i*37+step)%len(chunks)]
			}
			if err := bt.Probs(ctx(), in, got); err != nil {
				t.Fatal(err)
			}
			for i, d := range dets {
				want, err := d.Prob(ctx(), in[i])
				if err != nil {
					t.Fatal(err)
				}
				worst = max(worst, math.Abs(float64(got[i]-want)))
			}
		}
		if err := bt.Reset(ctx()); err != nil {
			t.Fatal(err)
		}
		for _, d := range dets {
			if err := d.Reset(ctx()); err != nil {
				t.Fatal(err)
			}
		}
		_ = round
	}
	t.Logf("%d streams × 80 chunks: largest difference from the detectors %.2g", streams, worst)
	if worst > 1e-5 || math.IsNaN(worst) {
		t.Errorf("batched probabilities differ from the detectors' by up to %g", worst)
	}
	if err := bt.Probs(ctx(), in[:2], got); err == nil {
		t.Error("a batch of 5 accepted 2 chunks")
	}
	bad := [][]float32{in[0], in[1], in[2], in[3], in[4][:100]}
	if err := bt.Probs(ctx(), bad, got); err == nil {
		t.Error("a short chunk was accepted")
	}
}

// BenchmarkBatch scores a round of chunks of many streams at once (each
// stream contributes one chunk per op), on the compiled program and on the
// fast path, and reports the cost per stream's chunk in wall and CPU time.
func BenchmarkBatch(b *testing.B) {
	chunks := benchChunks(b)
	for _, p := range benchPaths(b) {
		for _, n := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/streams=%d", p.name, n), func(b *testing.B) {
				bt, err := p.m.NewBatch(ctx(), vad.Rate16k, n)
				if err != nil {
					b.Fatal(err)
				}
				defer bt.Close()
				in := make([][]float32, n)
				for i := range in {
					in[i] = chunks[i%len(chunks)]
				}
				out := make([]float32, n)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := procstat.CPUTime()
				for b.Loop() {
					if err := bt.Probs(ctx(), in, out); err != nil {
						b.Fatal(err)
					}
				}
				per := float64(n * b.N)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/per, "µs/stream-chunk")
				b.ReportMetric(float64((procstat.CPUTime()-cpu0).Nanoseconds())/1e3/per, "cpu-µs/stream-chunk")
				b.ReportMetric(per/b.Elapsed().Seconds(), "chunks/s")
			})
		}
	}
}
