package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/procstat"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
)

// paragraph is the 30-word benchmark text.
const paragraph = "The old lighthouse keeper climbed the winding stairs each evening, lit the great lamp, " +
	"and watched ships pass safely through the narrow channel toward the quiet harbor beyond the hill."

func BenchmarkParagraphFP32(b *testing.B) { benchParagraph(b, false) }
func BenchmarkParagraphInt8(b *testing.B) { benchParagraph(b, true) }

// benchParagraph runs the say pipeline (front-end, Kokoro, 24 kHz sink)
// on the paragraph and reports the real-time factor (wall/audio), the
// CPU-seconds per audio second (steadier than wall time on a shared
// machine) and the time to first audio (TTFA), from the pipeline's start
// with the model loaded and warmed, as the CLI measures it. ttfa-cold-ms
// is the first run after Warm, which also compiles the programs for the
// paragraph's shapes (as a first request does); ttfa-ms and rtf are the
// mean of the runs after it.
func benchParagraph(b *testing.B, int8 bool) {
	if n := len(strings.Fields(paragraph)); n != 30 {
		b.Fatalf("paragraph has %d words", n)
	}
	front := needFrontEnd(b)
	w, err := kokoro.LoadWeights(context.Background(), int8)
	if err != nil {
		b.Skipf("SKIP: Kokoro weights unavailable: %v", err)
	}
	defer w.Close()
	voices, err := kokoro.LoadVoices(context.Background())
	if err != nil {
		b.Skipf("SKIP: Kokoro voices unavailable: %v", err)
	}
	defer voices.Close()
	voice, err := voices.Voice("af_heart")
	if err != nil {
		b.Fatal(err)
	}
	model, err := kokoro.New(graph.NewEngine(cpu.New()), w)
	if err != nil {
		b.Fatal(err)
	}
	speak := func(ctx context.Context, c g2p.Chunk) ([]float32, error) { return model.SpeakChunk(ctx, c, voice, 1) }
	once := func() (audio float64, ttfa time.Duration) {
		var samples int64
		sink := func(_ context.Context, pcm []float32) error { samples += int64(len(pcm)); return nil }
		p, _, err := buildPipeline(&g2p.Chunker{G2P: front, MaxTokens: defaultMaxTokens}, speak, kokoro.DefaultFirstTokens, kokoro.SampleRate, strings.NewReader(paragraph), sink)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		return float64(samples) / kokoro.SampleRate, p.Metrics().TimeToFirstOutput()
	}
	if err := model.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	_, cold := once() // compiles the programs for these shapes
	b.ResetTimer()
	var audio float64
	var ttfa time.Duration
	c0, w0 := procstat.CPUTime(), time.Now()
	for range b.N {
		a, t := once()
		audio += a
		ttfa += t
	}
	wall, cpuSec := time.Since(w0).Seconds(), (procstat.CPUTime() - c0).Seconds()
	b.ReportMetric(wall/audio, "rtf")
	b.ReportMetric(cpuSec/audio, "cpu-s/audio-s")
	b.ReportMetric(float64(ttfa.Milliseconds())/float64(b.N), "ttfa-ms")
	b.ReportMetric(float64(cold.Milliseconds()), "ttfa-cold-ms")
	b.ReportMetric(audio/float64(b.N), "audio-s")
}
