package whisper_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// greedySteps starts w on prefix and feeds it the argmax token for steps
// steps (prompts of different lengths put the windows of a batch at
// different positions), returning the logits of every step.
func greedySteps(ctx context.Context, w *whisper.Window, prefix []int32, steps, vocab int) ([][]float32, error) {
	row := make([]float32, vocab)
	if err := w.Start(ctx, 1, prefix, []int{len(prefix) - 1}, [][]float32{row}); err != nil {
		return nil, err
	}
	var out [][]float32
	for range steps {
		tok := []int32{int32(argmaxRow(row))}
		next := make([]float32, vocab)
		if err := w.Step(ctx, tok, [][]float32{next}); err != nil {
			return nil, err
		}
		out = append(out, next)
		row = next
	}
	w.Finish()
	return out, nil
}

// TestBatchMatchesAlone: windows of three clips, started on prefixes of
// different lengths, stepped greedily through one Batch at once give the
// logits each gives stepped alone (relative L2 ≤ 1e-5, same argmax); the
// rounds held more than one sequence; a fourth window finds no free slot
// and steps alone, as correctly.
func TestBatchMatchesAlone(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	V := m.Config().Vocab
	sot, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tokenizer().Specials().StartOfPrev
	clips := []string{"jfk", "cards_001", "goforward", "cards_005"}
	prefixes := [][]int32{
		sot,
		append([]int32{prompt, 440, 1029, 13}, sot...),
		append([]int32{prompt, 2000, 2001, 2002, 2003, 2004, 2005, 2006}, sot...),
		sot,
	}
	const steps = 24
	windows := make([]*whisper.Window, len(clips))
	for i, c := range clips {
		a, err := m.NewAudio(clipSamples(t, c))
		if err != nil {
			t.Fatal(err)
		}
		feats, err := a.Features(nil, 0)
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
		if windows[i], err = m.Encode(bg, feats); err != nil {
			t.Fatal(err)
		}
		defer windows[i].Close()
	}
	alone := make([][][]float32, len(clips))
	for i, w := range windows {
		if alone[i], err = greedySteps(bg, w, prefixes[i], steps, V); err != nil {
			t.Fatal(err)
		}
	}

	b, err := m.NewBatch(3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	together := make([][][]float32, len(clips))
	errs := make([]error, len(clips))
	var wg sync.WaitGroup
	for i, w := range windows {
		w.UseBatch(b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			together[i], errs[i] = greedySteps(bg, w, prefixes[i], steps, V)
		}()
	}
	wg.Wait()
	for i, c := range clips {
		if errs[i] != nil {
			t.Fatalf("%s: %v", c, errs[i])
		}
		for s := range steps {
			got, want := together[i][s], alone[i][s]
			if rel := relL2(got, want); rel > 1e-5 || argmaxRow(got) != argmaxRow(want) {
				t.Fatalf("%s step %d: batched logits rel L2 %.2g from alone's, argmax %d vs %d", c, s, rel, argmaxRow(got), argmaxRow(want))
			}
		}
	}
	rounds, seqs := b.Stats()
	if rounds == 0 || float64(seqs)/float64(rounds) < 1.5 {
		t.Errorf("%d sequence steps in %d rounds: the windows did not step together", seqs, rounds)
	}
	if seqs != 3*steps {
		t.Errorf("%d sequence steps in the batch, want %d (three slots; the fourth window steps alone)", seqs, 3*steps)
	}
	t.Logf("%d sequence steps in %d rounds", seqs, rounds)
}

// TestBatchErrors: a batch needs a size; a step whose context ends while it
// waits for the others returns the context's error and leaves no
// goroutine behind; a closed batch refuses steps.
func TestBatchErrors(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	if _, err := m.NewBatch(0); err == nil {
		t.Error("NewBatch(0) succeeded")
	}
	V := m.Config().Vocab
	sot, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.NewAudio(clipSamples(t, "jfk"))
	if err != nil {
		t.Fatal(err)
	}
	feats, err := a.Features(nil, 0)
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	w1, err := m.Encode(bg, feats)
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	w2, err := m.Encode(bg, feats)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	b, err := m.NewBatch(2)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	row := [][]float32{make([]float32, V)}
	for _, w := range []*whisper.Window{w1, w2} {
		w.UseBatch(b)
		if err := w.Start(bg, 1, sot, []int{len(sot) - 1}, row); err != nil {
			t.Fatal(err)
		}
	}
	// w1 steps once (joining alone, it runs at once), then w2 joins, and
	// w2's second step waits for w1, which never comes: its context ends.
	if err := w1.Step(bg, []int32{440}, row); err != nil {
		t.Fatal(err)
	}
	if err := w2.Step(bg, []int32{440}, row); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, time.Millisecond)
	defer cancel()
	err = w2.Step(ctx, []int32{440}, row)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("step past its deadline: %v, want the deadline's error or none", err)
	}
	w1.Finish()
	w2.Finish()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w1.Step(bg, []int32{440}, row); !errors.Is(err, whisper.ErrClosed) {
		t.Errorf("step in a closed batch: %v, want ErrClosed", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the batch closed, %d before", n, before)
	}
}

func relL2(got, want []float32) float64 {
	var num, den float64
	for i := range got {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(num / den)
}
