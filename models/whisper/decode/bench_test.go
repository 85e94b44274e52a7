package decode

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// BenchmarkGreedyStep measures the decoding loop's own cost per token at
// Whisper's vocabulary size (51865): the rules, the choice and the
// log-probability, with a decoder that only copies a fixed row.
func BenchmarkGreedyStep(b *testing.B) {
	const vocab = 51865
	sp := tokenizer.Specials{EOT: 50257, SOT: 50258, Translate: 50358, Transcribe: 50359, StartOfLM: 50360,
		StartOfPrev: 50361, NoSpeech: 50362, NoTimestamps: 50363, TimestampBegin: 50364, Space: 220,
		Languages: []tokenizer.Language{{Code: "en", Name: "english", ID: 50259}}}
	r := rand.New(rand.NewPCG(1, 1))
	row := make([]float32, vocab)
	for i := range row {
		row[i] = float32(r.NormFloat64())
	}
	row[400] = 30 // a text token wins every step
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"openai-notimestamps", Options{Rules: OpenAI, SuppressBlank: true, SuppressTokens: []int32{1, 2, 7}}},
		{"openai-timestamps", Options{Rules: OpenAI, Timestamps: true, SuppressBlank: true, SuppressTokens: []int32{1, 2, 7}, MaxInitialTimestamp: 1}},
		{"transformersjs-timestamps", TransformersJSOptions("en", true)},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := c.opts
			o.SampleLen = 100
			tk, err := newTask(&countingDecoder{row: row}, vocab, &sp, o, "en", nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := tk.run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*o.SampleLen), "µs/token")
		})
	}
}
