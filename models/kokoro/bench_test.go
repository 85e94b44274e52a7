package kokoro

import (
	"context"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/procstat"
)

// BenchmarkForward synthesises the fox sentence (am_michael, 3.8 s of
// audio) from its golden ids and reports the real-time factor.
func BenchmarkForward(b *testing.B) {
	m := loadTestModel(b)
	g := loadGolden(b, "fox_am_michael")
	ctx := context.Background()
	if _, err := m.Forward(ctx, g.ids, g.style, g.speed); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	start, cpu0 := time.Now(), procstat.CPUTime()
	var samples int
	for range b.N {
		tr, err := m.Forward(ctx, g.ids, g.style, g.speed)
		if err != nil {
			b.Fatal(err)
		}
		samples += len(tr.Audio)
	}
	audio := float64(samples) / SampleRate
	b.ReportMetric(time.Since(start).Seconds()/audio, "rtf")
	b.ReportMetric((procstat.CPUTime()-cpu0).Seconds()/audio, "cpu-s/audio-s")
}
