package decode

import (
	"math"
	"testing"
)

// TestSegmentStats: each segment of a window averages its own tokens (the
// last with the <|endoftext|>), a window of one segment keeps its
// average, and later segments take the no-speech probability at their
// opening timestamp.
func TestSegmentStats(t *testing.T) {
	nan := math.NaN()
	res := &Result{
		Tokens:        []int32{1, 2, 3, 4, 5, 6},
		LogProbs:      []float64{-1, -1, -1, -3, -3, -3, -2}, // the last: <|endoftext|>
		NoSpeechProbs: []float64{0.5, 0.1, 0.1, 0.02, 0.3, 0.3, 0.3},
		AvgLogProb:    -14.0 / 7, NoSpeechProb: 0.25,
	}
	for _, c := range []struct {
		name          string
		off, n        int
		last          bool
		avg, noSpeech float64
	}{
		{"first of two", 0, 3, false, -1, 0.25},
		{"second of two, with the end", 3, 3, true, -11.0 / 4, 0.02},
		{"the only one", 0, 6, true, -2, 0.25},
		{"last, text left after it", 0, 4, true, -6.0 / 4, 0.25},
	} {
		avg, ns := segmentStats(res, c.off, c.n, c.last)
		if math.Abs(avg-c.avg) > 1e-12 || ns != c.noSpeech {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, avg, ns, c.avg, c.noSpeech)
		}
	}
	// A Continue prefix (NaN) is left out; the sample length running out
	// still counts an end, as the window's average does.
	cont := &Result{Tokens: []int32{1, 2, 3}, LogProbs: []float64{nan, -1, -2}, NoSpeechProbs: []float64{nan, 0.1, 0.2}, AvgLogProb: -1, NoSpeechProb: 0.4}
	if avg, ns := segmentStats(cont, 0, 3, true); avg != -1 || ns != 0.4 {
		t.Errorf("continued: %v, %v", avg, ns)
	}
	// Without statistics: the window's values.
	if avg, ns := segmentStats(&Result{Tokens: []int32{1}, AvgLogProb: -0.5, NoSpeechProb: 0.1}, 0, 1, true); avg != -0.5 || ns != 0.1 {
		t.Errorf("no statistics: %v, %v", avg, ns)
	}
}
