package metal

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/codegen/mslshim"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/vocab"
	"github.com/tensorforge/forge/models/vad"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/weights"
)

// recorder stands in for the Metal backend on Linux: it answers Supports
// as the backend does and remembers every step it was asked about, runs
// what it accepts on kernels/cpu, and shares memory with the host (the
// engine takes the unified-memory path, as on a Mac).
type recorder struct {
	*cpu.Backend
	mu       sync.Mutex
	accepted []kernels.Step
	declined map[kernels.Op]int
}

func (r *recorder) Name() string { return "metal-recorder" }

func (r *recorder) Supports(s *kernels.Step) bool {
	ok := supports(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.accepted = append(r.accepted, *s)
	} else {
		r.declined[s.Op]++
	}
	return ok
}

// modelRun runs one model on an engine over r.
type modelRun struct {
	name string
	run  func(t *testing.T, ctx context.Context, eng *graph.Engine)
}

func modelRuns() []modelRun {
	return []modelRun{
		{"silero-vad", func(t *testing.T, ctx context.Context, eng *graph.Engine) {
			m, err := vad.Open(ctx, eng)
			if err != nil {
				missingWeights(t, err)
			}
			defer m.Close()
			clip := readJFK(t)
			if _, err := m.Probs(ctx, clip.Samples, clip.SampleRate); err != nil {
				t.Fatal(err)
			}
		}},
		{"whisper-tiny", func(t *testing.T, ctx context.Context, eng *graph.Engine) {
			m, err := whisper.Open(ctx, eng, "tiny", whisper.F32)
			if err != nil {
				missingWeights(t, err)
			}
			opts := decode.DefaultTranscribeOptions(decode.OpenAIOptions(m.Tokenizer()))
			if _, err := m.Transcribe(ctx, readJFK(t).Samples, opts); err != nil {
				t.Fatal(err)
			}
		}},
		{"kokoro-v1.0", func(t *testing.T, ctx context.Context, eng *graph.Engine) {
			c, err := weights.NewCache()
			if err != nil || !c.Ready(weights.KokoroV1) {
				missingWeights(t, fmt.Errorf("%s is not in the model cache (%v)", weights.KokoroV1, err))
			}
			a, err := c.Open(weights.KokoroV1)
			if err != nil {
				t.Fatal(err)
			}
			w, err := kokoro.NewWeights(a)
			if err != nil {
				t.Fatal(err)
			}
			m, err := kokoro.New(eng, w)
			if err != nil {
				t.Fatal(err)
			}
			ids, _, err := vocab.Encode("həlˈoʊ wˈɜːld.")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Synthesize(ctx, ids, make([]float32, 256), 1); err != nil {
				t.Fatal(err)
			}
		}},
	}
}

func missingWeights(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI fetches the models first (make models), but: %v", err)
	}
	t.Skipf("SKIPPING: needs the model weights (make models): %v", err)
}

func readJFK(t *testing.T) audio.Clip {
	t.Helper()
	clip, err := audio.ReadWAVFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	return clip
}

// TestModelProgramsMSL runs Silero VAD, Whisper tiny (jfk.wav) and Kokoro
// ("hello world") on an engine whose backend answers Supports as the
// Metal backend does, gathers every step the backend would run, and
// compiles the MSL of each distinct generated kernel among them with clang
// against the shim (the hand-written kernels compile in
// TestFixedKernelsOnShim). It logs, per model, the steps on the GPU by
// op, those left to the CPU, and the lines of MSL generated.
func TestModelProgramsMSL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three models")
	}
	requireClang(t)
	ctx := context.Background()
	for _, m := range modelRuns() {
		t.Run(m.name, func(t *testing.T) {
			r := &recorder{Backend: cpu.New(), declined: map[kernels.Op]int{}}
			m.run(t, ctx, graph.NewEngine(r, graph.WithHost(cpu.New())))
			perOp := map[kernels.Op]int{}
			seen := map[string]bool{}
			var srcs []string
			lines := 0
			for i := range r.accepted {
				s := &r.accepted[i]
				perOp[s.Op]++
				l, err := prepare(s)
				if err != nil && l == nil {
					t.Fatalf("step %q (%s) was accepted but does not prepare: %v", s.Name, s.Op, err)
				}
				if l.src == "" || seen[l.fn] {
					continue
				}
				seen[l.fn] = true
				srcs = append(srcs, l.src)
				lines += strings.Count(l.src, "\n")
			}
			if len(srcs) == 0 {
				t.Fatal("the model's programs have no generated kernels")
			}
			checkBatches(t, srcs)
			t.Logf("%s: %d distinct generated kernels, %d lines of MSL, all compiled by clang; steps on the GPU by op: %s; left to the CPU: %s",
				m.name, len(srcs), lines, opCounts(perOp), opCounts(r.declined))
		})
	}
	t.Logf("hand-written kernels (kernels.metal): %d lines of MSL", strings.Count(fixedSource, "\n"))
}

// checkBatches compiles sources (syntax and semantics, no code) in
// concatenated batches, two clang processes at a time: the generated
// helpers are include-guarded, so concatenation is valid.
func checkBatches(t *testing.T, srcs []string) {
	t.Helper()
	const per = 80
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	errs := make([]error, (len(srcs)+per-1)/per)
	for i := range errs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			batch := srcs[i*per : min(len(srcs), (i+1)*per)]
			errs[i] = mslshim.Check(ctx(), t.TempDir(), strings.Join(batch, ""))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
}

func ctx() context.Context { return context.Background() }

func opCounts(m map[kernels.Op]int) string {
	if len(m) == 0 {
		return "none"
	}
	var ops []kernels.Op
	for op := range m {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	var parts []string
	for _, op := range ops {
		parts = append(parts, fmt.Sprintf("%s %d", op, m[op]))
	}
	return strings.Join(parts, ", ")
}
