package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/signalcmp"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/cuda"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/models/whisper/whispertest"
)

// batchClips are golden clips of different lengths and words.
var batchClips = []string{"jfk", "cards_001", "goforward", "cards_005"}

// encodeClips encodes the first window of each golden clip, closed when
// the test ends.
// openTiny opens Whisper tiny (float32 weights) on its own engine over be,
// closed when tb ends, and returns it with the English transcription
// start sequence; it skips tb without the weights.
func openTiny(tb testing.TB, be kernels.Backend) (*whisper.Model, []int32) {
	tb.Helper()
	m, err := whisper.Open(context.Background(), graph.NewEngine(be), "tiny", whisper.F32)
	if err != nil {
		tb.Skipf("SKIPPED: needs the model weights: %v", err)
	}
	tb.Cleanup(func() { m.Close() })
	sot, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil {
		tb.Fatal(err)
	}
	return m, sot
}

func encodeClips(t testing.TB, m *whisper.Model, clips []string) []*whisper.Window {
	t.Helper()
	var ws []*whisper.Window
	for _, c := range clips {
		clip, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", c+".wav"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := whispertest.EncodeFirst(context.Background(), m, clip.Samples)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		ws = append(ws, w)
	}
	return ws
}

// TestGPUBatch: on the GPU, windows of four golden clips started on
// prefixes of different lengths and stepped through one whisper.Batch give
// each window's logits alone within relative L2 1e-4 (f32) or 2e-3 (f16
// products) with the same argmax at every step, and TranscribeMany of the
// clips four times over (16 recordings: it batches them) gives each clip's
// transcript alone.
func TestGPUBatch(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		prec kernels.DType
		tol  float64
	}{{kernels.F32, 1e-4}, {kernels.F16, 2e-3}} {
		t.Run(c.prec.String(), func(t *testing.T) {
			be := gpu(t, c.prec)
			m, sot := openTiny(t, be)
			V := m.Config().Vocab
			var err error
			prev := m.Tokenizer().Specials().StartOfPrev
			prefixes := [][]int32{sot, append([]int32{prev, 440, 1029, 13}, sot...), append([]int32{prev, 2000, 2001, 2002, 2003, 2004, 2005, 2006}, sot...), sot}
			ws := encodeClips(t, m, batchClips)
			const steps = 24
			alone := make([][][]float32, len(ws))
			for i, w := range ws {
				if alone[i], err = whispertest.GreedySteps(ctx, w, prefixes[i], steps, V); err != nil {
					t.Fatal(err)
				}
			}
			b, err := m.NewBatch(len(ws))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			together := make([][][]float32, len(ws))
			errs := make([]error, len(ws))
			var wg sync.WaitGroup
			for i, w := range ws {
				w.UseBatch(b)
				wg.Add(1)
				go func() {
					defer wg.Done()
					together[i], errs[i] = whispertest.GreedySteps(ctx, w, prefixes[i], steps, V)
				}()
			}
			wg.Wait()
			worst := 0.0
			for i := range ws {
				if errs[i] != nil {
					t.Fatalf("%s: %v", batchClips[i], errs[i])
				}
				for s := range steps {
					got, want := together[i][s], alone[i][s]
					rel := signalcmp.RelL2(got, want)
					worst = max(worst, rel)
					if !(rel <= c.tol) || whispertest.Argmax(got) != whispertest.Argmax(want) {
						t.Errorf("%s step %d: batched logits rel L2 %.2g from alone's (bound %g), argmax %d vs %d", batchClips[i], s, rel, c.tol, whispertest.Argmax(got), whispertest.Argmax(want))
					}
				}
			}
			st := b.Stats()
			rounds, seqs := st.Rounds, st.Sequences
			t.Logf("%s: %d sequence steps in %d rounds; batched logits within rel L2 %.2g of each window's alone", be.Device(), seqs, rounds, worst)
			if seqs != int64(len(ws)*steps) || rounds >= seqs {
				t.Errorf("%d sequence steps in %d rounds: the windows did not step together", seqs, rounds)
			}

			opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
			opts.Language = "en"
			var recs [][]float32
			var texts []string
			for _, name := range batchClips {
				clip, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", name+".wav"))
				if err != nil {
					t.Fatal(err)
				}
				one, err := m.Transcribe(ctx, clip.Samples, opts)
				if err != nil {
					t.Fatal(err)
				}
				recs, texts = append(recs, clip.Samples), append(texts, one.Text)
			}
			recs = slices.Repeat(recs, 4)
			many, err := m.TranscribeMany(ctx, recs, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				if want := texts[i%len(texts)]; many[i].Text != want {
					t.Errorf("%s (recording %d): TranscribeMany %q, Transcribe %q", batchClips[i%len(texts)], i, many[i].Text, want)
				}
			}
		})
	}
}

// BenchmarkGPUBatchStep: greedy decoder steps of n windows at once, each
// op one step of every window: "batch" through one whisper.Batch (one
// program per token for all), "alone" each window on its own decoder from
// its own goroutine (concurrent launches, as TranscribeMany decoded
// before Batch).
func BenchmarkGPUBatchStep(b *testing.B) {
	for _, prec := range []kernels.DType{kernels.F16, kernels.F32} {
		benchBatchStep(b, prec.String(), gpu(b, prec), []int{1, 8, 32})
	}
}

// BenchmarkCPUBatchStep is BenchmarkGPUBatchStep on the CPU backend, where
// a step is bound by reading the weights, which a batch reads once.
func BenchmarkCPUBatchStep(b *testing.B) {
	benchBatchStep(b, "cpu", cpu.New(), []int{1, 4, 8})
}

func benchBatchStep(b *testing.B, name string, be kernels.Backend, sizes []int) {
	ctx := context.Background()
	m, sot := openTiny(b, be)
	var err error
	for _, n := range sizes {
		ws := encodeClips(b, m, slices.Repeat([]string{"jfk"}, n))
		for _, batched := range []bool{true, false} {
			mode := "alone"
			var bt *whisper.Batch
			if batched {
				mode = "batch"
				if bt, err = m.NewBatch(n); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(fmt.Sprintf("%s/%s-%d", name, mode, n), func(b *testing.B) {
				V := m.Config().Vocab
				// Each window steps from position 4 to 4+rounds, then
				// starts again; rounds per start is fixed so every
				// window restarts in the same round.
				const per = 48
				run := func(rounds int) {
					var wg sync.WaitGroup
					for _, w := range ws {
						w.UseBatch(bt)
						wg.Add(1)
						go func() {
							defer wg.Done()
							logits := [][]float32{make([]float32, V)}
							for done := 0; done < rounds; {
								if err := w.Start(ctx, 1, sot, []int{len(sot) - 1}, logits); err != nil {
									b.Error(err)
									return
								}
								for k := 0; k < per && done < rounds; k++ {
									if err := w.Step(ctx, []int32{440}, logits); err != nil {
										b.Error(err)
										return
									}
									done++
								}
								w.Finish()
							}
						}()
					}
					wg.Wait()
				}
				run(per) // compile and record every attended length
				var st0 whisper.BatchStats
				if bt != nil {
					st0 = bt.Stats()
				}
				b.ResetTimer()
				run(b.N)
				b.StopTimer()
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "seq-steps/s")
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/round")
				if bt != nil {
					st := bt.Stats()
					rounds := float64(st.Rounds - st0.Rounds)
					b.ReportMetric((st.Busy-st0.Busy).Seconds()*1e3/rounds, "busy-ms/round")
					b.ReportMetric(float64(st.Sequences-st0.Sequences)/rounds, "seqs/round")
				}
			})
			for _, w := range ws {
				w.UseBatch(nil)
			}
			if bt != nil {
				bt.Close()
			}
		}
		for _, w := range ws {
			w.Close()
		}
	}
}

// TestGPUProfileBatch logs where the device time of 32 windows' batched
// greedy steps goes, kernel by kernel (with FORGE_CUDA_PROFILE set:
// profiling turns CUDA graphs off).
func TestGPUProfileBatch(t *testing.T) {
	if os.Getenv("FORGE_CUDA_PROFILE") == "" {
		t.Skip("SKIPPED: set FORGE_CUDA_PROFILE=1 to profile the GPU backend")
	}
	ctx := context.Background()
	be := gpu(t, kernels.F16)
	m, sot := openTiny(t, be)
	var ws []*whisper.Window
	for range 8 { // 32 windows
		ws = append(ws, encodeClips(t, m, batchClips)...)
	}
	bt, err := m.NewBatch(len(ws))
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	V := m.Config().Vocab
	for pass := range 2 {
		be.ResetProfile()
		start := time.Now()
		var wg sync.WaitGroup
		for _, w := range ws {
			w.UseBatch(bt)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := whispertest.GreedySteps(ctx, w, sot, 24, V); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if pass == 1 {
			st := bt.Stats()
			t.Logf("%d windows × 24 steps in %v (%d rounds in all, busy %v):\n%s", len(ws), time.Since(start), st.Rounds, st.Busy, be.Profile())
		}
	}
}

// goldenAudio lists ../shared/golden/audio's clips.
var goldenAudio = []string{"jfk", "cards_001", "cards_002", "cards_003", "cards_004", "cards_005", "goforward", "silero_test"}

// TestGPUGoldenTokens: Whisper tiny on the GPU, with float32 and with f16
// products, samples the CPU's float32 tokens (timestamps included) on
// every golden clip, jfk among them: issue 12's acceptance for half
// precision.
func TestGPUGoldenTokens(t *testing.T) {
	ctx := context.Background()
	gpus := []*cuda.Backend{gpu(t, kernels.F32), gpu(t, kernels.F16)}
	tokens := func(tr *decode.Transcript) []int32 {
		var ids []int32
		for _, s := range tr.Segments {
			ids = append(ids, s.Tokens...)
		}
		return ids
	}
	cm, _ := openTiny(t, cpu.New())
	opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(cm.Tokenizer()))
	opts.Language = "en"
	clips := make([][]float32, len(goldenAudio))
	want := make([]*decode.Transcript, len(goldenAudio))
	for i, name := range goldenAudio {
		clip, err := audio.ReadWAVFile(testenv.Shared(t, "golden", "audio", name+".wav"))
		if err != nil {
			t.Fatal(err)
		}
		clips[i] = clip.Samples
		if want[i], err = cm.Transcribe(ctx, clip.Samples, opts); err != nil {
			t.Fatal(err)
		}
	}
	for _, be := range gpus {
		m, _ := openTiny(t, be)
		equal := 0
		for i, name := range goldenAudio {
			got, err := m.Transcribe(ctx, clips[i], opts)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(tokens(got), tokens(want[i])) {
				equal++
			} else {
				t.Errorf("%s, %s: GPU %q, CPU %q (tokens differ)", be.Device(), name, got.Text, want[i].Text)
			}
		}
		t.Logf("%s: tokens equal to the CPU's float32 ones on %d of %d clips", be.Device(), equal, len(goldenAudio))
	}
}
