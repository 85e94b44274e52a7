package kokoro

import (
	"context"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/procstat"
	"github.com/tensorforge/forge/models/kokoro/g2p"
)

// BenchmarkFirstAudio runs what comes before a streamed chunk's first
// audio on say's 30-word benchmark paragraph (one sentence, 188 phoneme
// tokens, af_heart): graphs 1 and 2 over the whole chunk, then graph 3
// over the first window. It reports the best run's stages (text,
// prosody, window), steadier than their means on a shared machine, and
// the CPU time per run. The first run, which compiles the programs for
// these shapes, is left out.
func BenchmarkFirstAudio(b *testing.B) {
	m := loadTestModel(b)
	ctx := context.Background()
	front, err := g2p.NewEspeak(g2p.AmericanEnglish)
	if err != nil {
		b.Skipf("SKIP: espeak-ng unavailable: %v", err)
	}
	const paragraph = "The old lighthouse keeper climbed the winding stairs each evening, lit the great lamp, " +
		"and watched ships pass safely through the narrow channel toward the quiet harbor beyond the hill."
	var c g2p.Chunk
	for ch, err := range (&g2p.Chunker{G2P: front}).ChunkString(ctx, paragraph) {
		if err != nil {
			b.Fatal(err)
		}
		c = ch
		break
	}
	vs, err := LoadVoices(ctx)
	if err != nil {
		b.Skipf("SKIP: voices unavailable: %v", err)
	}
	defer vs.Close()
	v, err := vs.Voice("af_heart")
	if err != nil {
		b.Fatal(err)
	}
	style := v.Style(c.Tokens())
	run := func() (text, prosody, window time.Duration) {
		t0 := time.Now()
		tr := &Trace{}
		d, tEn, err := m.runText(ctx, c.IDs, style, 1, tr)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		err = m.runProsody(ctx, d, tEn, style, tr)
		closeHeld(d, tEn)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		join, ok := firstJoin(c.IDs, tr.Durations, DefaultFirstTokens)
		if !ok {
			b.Fatal("the paragraph is not streamed")
		}
		if err := m.runDecoder(ctx, style, tr.window(0, min(frames(tr.Durations), join+contextFrames)), sourceSpan{}); err != nil {
			b.Fatal(err)
		}
		return t1.Sub(t0), t2.Sub(t1), time.Since(t2)
	}
	run() // compiles
	b.ResetTimer()
	var best [4]time.Duration
	c0 := procstat.CPUTime()
	for i := range b.N {
		text, prosody, window := run()
		if total := text + prosody + window; i == 0 || total < best[3] {
			best = [4]time.Duration{text, prosody, window, total}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms((procstat.CPUTime()-c0)/time.Duration(b.N)), "cpu-ms/op")
	b.ReportMetric(ms(best[0]), "text-ms")
	b.ReportMetric(ms(best[1]), "prosody-ms")
	b.ReportMetric(ms(best[2]), "window-ms")
	b.ReportMetric(ms(best[3]), "best-ms")
}
