package say

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/procstat"
)

// paragraph is the 30-word benchmark text.
const paragraph = "The old lighthouse keeper climbed the winding stairs each evening, lit the great lamp, " +
	"and watched ships pass safely through the narrow channel toward the quiet harbor beyond the hill."

func BenchmarkParagraphFP32(b *testing.B) { benchParagraph(b, paragraph, false) }
func BenchmarkParagraphInt8(b *testing.B) { benchParagraph(b, paragraph, true) }

// BenchmarkButton is issue 17's shortest request, "Button.": its ttfa-ms
// is the time from the text to the first audio with the model warm.
func BenchmarkButton(b *testing.B) { benchParagraph(b, "Button.", false) }

// benchParagraph runs Synthesize (front-end, Kokoro, 24 kHz) on text
// and reports the real-time factor (wall/audio), the
// CPU-seconds per audio second (steadier than wall time on a shared
// machine), the time to first audio (TTFA), from the run's start with
// the model loaded and warmed, and the gaps a real-time player would
// leave after it (Result.Stall). ttfa-cold-ms is the first run after New,
// which also compiles the programs for the paragraph's shapes (as a first
// request does); ttfa-ms, stall-ms and rtf are the mean of the runs after
// it.
func benchParagraph(b *testing.B, text string, int8 bool) {
	needFrontEnd(b)
	s, err := New(context.Background(), Config{Int8: int8, Device: "cpu"})
	if err != nil {
		b.Skipf("SKIP: Kokoro unavailable: %v", err)
	}
	defer s.Close()
	once := func() (audio float64, ttfa, stall time.Duration) {
		res, err := s.Synthesize(context.Background(), String(text), Options{}, func(Audio) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		return res.Seconds(), res.TTFA, res.Stall
	}
	_, cold, _ := once() // compiles the programs for these shapes
	b.ResetTimer()
	var audio float64
	var ttfa, stall time.Duration
	c0, w0 := procstat.CPUTime(), time.Now()
	for range b.N {
		a, t, st := once()
		audio += a
		ttfa += t
		stall += st
	}
	wall, cpuSec := time.Since(w0).Seconds(), (procstat.CPUTime() - c0).Seconds()
	b.ReportMetric(wall/audio, "rtf")
	b.ReportMetric(cpuSec/audio, "cpu-s/audio-s")
	b.ReportMetric(float64(ttfa.Milliseconds())/float64(b.N), "ttfa-ms")
	b.ReportMetric(float64(stall.Milliseconds())/float64(b.N), "stall-ms")
	b.ReportMetric(float64(cold.Milliseconds()), "ttfa-cold-ms")
	b.ReportMetric(audio/float64(b.N), "audio-s")
}

func TestBenchmarkParagraphHas30Words(t *testing.T) {
	if n := len(strings.Fields(paragraph)); n != 30 {
		t.Fatalf("paragraph has %d words", n)
	}
}
