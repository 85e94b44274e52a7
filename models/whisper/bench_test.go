package whisper_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/procstat"

	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

var benchModels = []struct {
	size string
	prec whisper.Precision
}{{"tiny", whisper.F32}, {"tiny", whisper.BF16}, {"tiny", whisper.Int8}, {"base", whisper.F32}, {"base", whisper.BF16}, {"base", whisper.Int8}}

// BenchmarkTranscribe is the benchmark: jfk.wav (11 s) in memory →
// text, model loaded and warmed up (programs compiled), greedy decoding
// with OpenAI's rules and English given, RealLength windows (the default;
// BenchmarkTranscribePadded encodes 30 s). It reports the real-time factor,
// the CPU seconds per run (less sensitive than wall time to other work on a
// shared machine) and the process's peak resident memory.
func BenchmarkTranscribe(b *testing.B) { benchTranscribe(b, whisper.RealLength) }

// BenchmarkTranscribePadded is BenchmarkTranscribe with FullWindow windows
// (30 s encoded, as before RealLength).
func BenchmarkTranscribePadded(b *testing.B) { benchTranscribe(b, whisper.FullWindow) }

func benchTranscribe(b *testing.B, span whisper.EncodeLength) {
	for _, c := range benchModels {
		b.Run(c.size+"/"+c.prec.String(), func(b *testing.B) {
			m := modelWith(b, c.size, c.prec, span)
			samples := clipSamples(b, "jfk")
			opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
			opts.Language = "en"
			tr, err := m.Transcribe(bg, samples, opts) // warm-up: compiles
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(tr.Text, "ask not what your country can do for you") {
				b.Fatalf("transcript %q", tr.Text)
			}
			cpu0 := procstat.CPUTime()
			b.ResetTimer()
			for range b.N {
				if _, err := m.Transcribe(bg, samples, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			audio := float64(len(samples)) / 16000
			per := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(per/audio, "rtf")
			b.ReportMetric((procstat.CPUTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(procstat.PeakRSS())/(1<<20), "peak-MiB")
		})
	}
}

// BenchmarkEncoder runs the encoder on one 30-s window (jfk's golden
// features); BenchmarkEncodeLength times shorter ones.
func BenchmarkEncoder(b *testing.B) {
	for _, c := range benchModels {
		b.Run(c.size+"/"+c.prec.String(), func(b *testing.B) {
			m := model(b, c.size, c.prec)
			feats, _ := goldenF32(b, goldenFile(b, c.size, "jfk"), "input_features")
			if _, err := m.EncoderOutput(bg, feats); err != nil { // compile
				b.Fatal(err)
			}
			cpu0 := procstat.CPUTime()
			b.ResetTimer()
			for range b.N {
				if _, err := m.EncoderOutput(bg, feats); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((procstat.CPUTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkEncodeLength encodes the first window of recordings of 1, 5, 11
// (jfk) and 30 s, as a transcription does (Audio.Encode: the encoder and
// the cross-attention keys and values of every decoder layer), with
// RealLength and FullWindow windows. The recordings are jfk's first
// seconds, and jfk three times over cut at 30 s. Programs are compiled and
// the silence tail made before the timer starts; the window's session is
// reused from one run to the next, as in a transcription of utterances of
// one length (the tail is not copied again).
func BenchmarkEncodeLength(b *testing.B) {
	for _, c := range benchModels {
		for _, secs := range []int{1, 5, 11, 30} {
			for _, span := range []whisper.EncodeLength{whisper.RealLength, whisper.FullWindow} {
				b.Run(fmt.Sprintf("%s/%s/%ds/%s", c.size, c.prec, secs, span), func(b *testing.B) {
					m := modelWith(b, c.size, c.prec, span)
					jfk := clipSamples(b, "jfk")
					samples := append(append(append([]float32(nil), jfk...), jfk...), jfk...)[:secs*16000]
					a, err := m.NewAudio(samples)
					if err != nil {
						b.Fatal(err)
					}
					defer a.Close()
					frames := min(a.Frames(), m.Config().Frames())
					if _, err := a.Encode(bg, 0, frames); err != nil { // compile
						b.Fatal(err)
					}
					cpu0 := procstat.CPUTime()
					b.ResetTimer()
					for range b.N {
						if _, err := a.Encode(bg, 0, frames); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric((procstat.CPUTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
				})
			}
		}
	}
}

// BenchmarkDecoderStep times one greedy decoder step (one hypothesis, one
// token, logits read back) at positions 4 to 40 of a window encoded from
// jfk, the range a short utterance's transcript covers. It also reports how
// many graphs the model built and how many programs it compiled per step.
func BenchmarkDecoderStep(b *testing.B) {
	for _, c := range benchModels {
		b.Run(c.size+"/"+c.prec.String(), func(b *testing.B) {
			m := model(b, c.size, c.prec)
			feats, _ := goldenF32(b, goldenFile(b, c.size, "jfk"), "input_features")
			w, err := m.Encode(bg, feats)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			prefix, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
			if err != nil {
				b.Fatal(err)
			}
			logits := [][]float32{make([]float32, m.Config().Vocab)}
			start := func() {
				if err := w.Start(bg, 1, prefix, []int{len(prefix) - 1}, logits); err != nil {
					b.Fatal(err)
				}
			}
			token := []int32{440} // any ordinary token: the step's cost does not depend on it
			start()
			for w.Positions() < 40 { // warm-up: every program a step needs is compiled
				if err := w.Step(bg, token, logits); err != nil {
					b.Fatal(err)
				}
			}
			start()
			st0 := m.Engine().Stats()
			cpu0 := procstat.CPUTime()
			b.ResetTimer()
			for range b.N {
				if w.Positions() >= 40 {
					b.StopTimer()
					start()
					b.StartTimer()
				}
				if err := w.Step(bg, token, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((procstat.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			st := m.Engine().Stats()
			b.ReportMetric(float64(st.GraphBuilds-st0.GraphBuilds)/float64(b.N), "builds/op")
			b.ReportMetric(float64(st.Compiles-st0.Compiles)/float64(b.N), "compiles/op")
		})
	}
}
