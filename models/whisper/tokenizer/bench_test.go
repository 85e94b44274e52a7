package tokenizer_test

import (
	"strings"
	"testing"

	"github.com/tensorforge/forge/models/whisper/tokenizer/tokenizertest"
)

var benchText = strings.Repeat(" And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country. "+
	"Größe, naïve café — 日本語のテキスト 🙂 1,000,000 dollars!\n", 50)

func BenchmarkEncode(b *testing.B) {
	tok := tokenizertest.Tiny(b)
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		if _, err := tok.Encode(benchText); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := tokenizertest.Tiny(b)
	ids, err := tok.Encode(benchText)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchText)))
	b.ReportMetric(float64(len(ids)), "tokens/op")
	for b.Loop() {
		if _, err := tok.Decode(ids); err != nil {
			b.Fatal(err)
		}
	}
}
