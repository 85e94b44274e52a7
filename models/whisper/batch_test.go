package whisper_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/signalcmp"
	"github.com/tensorforge/forge/models/whisper"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/models/whisper/whispertest"
)

// TestBatchMatchesAlone: windows of four clips, started on prefixes of
// different lengths and stepped greedily for different numbers of steps
// through one Batch of eight slots (which never has the windows to
// dissolve at), give the logits each gives stepped alone (relative L2 ≤ 1e-5, same argmax): the rounds held more than one
// sequence; the first three take slots 0, 1 and 2 in turn (each steps
// once the one before has stepped), and when the second leaves, the third
// moves down a slot (the rounds run over the first two), or, where the
// fourth took the second's slot first, when the fourth leaves in turn. A
// second window that joined last (slot 2) would leave no one to move: in
// CI on a loaded 2-core machine the windows once joined in that order.
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
	steps := []int{24, 3, 24, 12}
	windows := encodeClips(t, m, clips...)
	alone := make([][][]float32, len(clips))
	for i, w := range windows {
		if alone[i], err = whispertest.GreedySteps(bg, w, prefixes[i], steps[i], V); err != nil {
			t.Fatal(err)
		}
	}

	b, err := m.NewBatch(8)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	together := make([][][]float32, len(clips))
	errs := make([]error, len(clips))
	var wg sync.WaitGroup
	secondLeft := make(chan struct{})
	stepped := make([]chan struct{}, len(windows)) // closed once window i has a slot (or has failed)
	for i := range stepped {
		stepped[i] = make(chan struct{})
	}
	for i, w := range windows {
		w.UseBatch(b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 3 {
				<-secondLeft
			}
			signal := sync.OnceFunc(func() { close(stepped[i]) })
			defer signal()
			together[i], errs[i] = whispertest.GreedyStepsEach(bg, w, prefixes[i], steps[i], V, func(step int) {
				switch {
				case step == 0 && (i == 1 || i == 2):
					<-stepped[i-1]
				case step == 1:
					signal()
				}
			})
			w.UseBatch(nil) // leaves its slot
			if i == 1 {
				close(secondLeft)
			}
		}()
	}
	wg.Wait()
	for i, c := range clips {
		if errs[i] != nil {
			t.Fatalf("%s: %v", c, errs[i])
		}
		for s := range steps[i] {
			got, want := together[i][s], alone[i][s]
			if rel := signalcmp.RelL2(got, want); rel > 1e-5 || whispertest.Argmax(got) != whispertest.Argmax(want) {
				t.Fatalf("%s step %d: batched logits rel L2 %.2g from alone's, argmax %d vs %d", c, s, rel, whispertest.Argmax(got), whispertest.Argmax(want))
			}
		}
	}
	st := b.Stats()
	rounds, seqs := st.Rounds, st.Sequences
	if rounds == 0 || float64(seqs)/float64(rounds) < 1.5 {
		t.Errorf("%d sequence steps in %d rounds: the windows did not step together", seqs, rounds)
	}
	if seqs != 63 {
		t.Errorf("%d sequence steps in the batch, want all 63", seqs)
	}
	if st.Moves == 0 {
		t.Error("no sequence moved to a lower slot")
	}
	t.Logf("%d sequence steps in %d rounds, %d moves", seqs, rounds, st.Moves)
}

// TestBatchDissolves: in a batch of two, once one window leaves, the other
// continues alone (the batch is not worth running for one) from its own
// cache, with the logits it gives stepped alone throughout.
func TestBatchDissolves(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	V := m.Config().Vocab
	sot, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil {
		t.Fatal(err)
	}
	windows := encodeClips(t, m, "jfk", "goforward")
	steps := []int{16, 4}
	alone := make([][][]float32, 2)
	for i, w := range windows {
		if alone[i], err = whispertest.GreedySteps(bg, w, sot, steps[i], V); err != nil {
			t.Fatal(err)
		}
	}
	b, err := m.NewBatch(2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	together := make([][][]float32, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, w := range windows {
		w.UseBatch(b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			together[i], errs[i] = whispertest.GreedySteps(bg, w, sot, steps[i], V)
			w.UseBatch(nil)
		}()
	}
	wg.Wait()
	for i := range windows {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for s := range steps[i] {
			if rel := signalcmp.RelL2(together[i][s], alone[i][s]); rel > 1e-5 {
				t.Fatalf("window %d step %d: logits rel L2 %.2g from alone's", i, s, rel)
			}
		}
	}
	st := b.Stats()
	if st.Alone != 1 || st.Sequences <= int64(steps[1]) {
		t.Errorf("%d sequence steps in the batch, %d sent on alone: want the second window's %d and some of the first's, then the first alone", st.Sequences, st.Alone, steps[1])
	}
	t.Logf("%d sequence steps in %d rounds, %d sent on alone", st.Sequences, st.Rounds, st.Alone)
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
	ws := encodeClips(t, m, "jfk", "jfk")
	w1, w2 := ws[0], ws[1]
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

	// A batch of one: the second window finds no free slot and steps
	// alone.
	one, err := m.NewBatch(1)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	for _, w := range []*whisper.Window{w1, w2} {
		w.UseBatch(one)
		if err := w.Start(bg, 1, sot, []int{len(sot) - 1}, row); err != nil {
			t.Fatal(err)
		}
		if err := w.Step(bg, []int32{440}, row); err != nil {
			t.Fatal(err)
		}
	}
	if st := one.Stats(); st.Sequences != 1 {
		t.Errorf("%d sequence steps in a batch of one, want 1 (the second window steps alone)", st.Sequences)
	}
	w1.UseBatch(b)
	w2.UseBatch(b)
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

// encodeClips encodes the first window of each golden clip, closed when
// the test ends.
func encodeClips(t *testing.T, m *whisper.Model, clips ...string) []*whisper.Window {
	t.Helper()
	var ws []*whisper.Window
	for _, c := range clips {
		w, err := whispertest.EncodeFirst(bg, m, clipSamples(t, c))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		ws = append(ws, w)
	}
	return ws
}

// TestEncodeBatchMatchesEncode: windows encoded in one batched pass (a
// batch axis through the encoder, then each window's slice of the
// batched cross-attention keys and values written into its own session)
// decode as each window encoded alone: the logits of a few greedy steps
// within relative L2 1e-5, with the same argmax. The second recording is
// the first played backwards, so the two windows have one length and
// different contents.
func TestEncodeBatchMatchesEncode(t *testing.T) {
	m := model(t, "tiny", whisper.F32)
	V := m.Config().Vocab
	sot, err := m.Tokenizer().SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil {
		t.Fatal(err)
	}
	jfk := clipSamples(t, "jfk")
	back := slices.Clone(jfk)
	slices.Reverse(back)
	var feats [][]float32
	for _, rec := range [][]float32{jfk, back} {
		a, err := m.NewAudio(rec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := a.Features(nil, 0)
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
		feats = append(feats, f)
	}
	batch, err := m.EncodeBatch(bg, feats)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 4
	for i, f := range feats {
		alone, err := m.Encode(bg, f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := whispertest.GreedySteps(bg, alone, sot, steps, V)
		alone.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, err := whispertest.GreedySteps(bg, batch[i], sot, steps, V)
		batch[i].Close()
		if err != nil {
			t.Fatal(err)
		}
		for s := range steps {
			if rel := signalcmp.RelL2(got[s], want[s]); rel > 1e-5 || whispertest.Argmax(got[s]) != whispertest.Argmax(want[s]) {
				t.Errorf("window %d step %d: batched logits rel L2 %.2g from alone's, argmax %d vs %d", i, s, rel, whispertest.Argmax(got[s]), whispertest.Argmax(want[s]))
			}
		}
	}
}
