package kokoro

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/tensorforge/forge/internal/filepages"
	"github.com/tensorforge/forge/internal/signalcmp"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"github.com/tensorforge/forge/models/kokoro/vocab"
)

func TestCheckArguments(t *testing.T) {
	m := &Model{vocab: 178}
	style := make([]float32, StyleSize)
	long := make([]int64, MaxPhonemes+3)
	nan := slices.Clone(style)
	nan[7] = float32(math.NaN())
	for _, c := range []struct {
		name  string
		ids   []int64
		style []float32
		speed float32
		want  error
	}{
		{"ok", []int64{0, 50, 0}, style, 1, nil},
		{"no ids", nil, style, 1, ErrNoPhonemes},
		{"pads only", []int64{0, 0}, style, 1, ErrNoPhonemes},
		{"too long", long, style, 1, ErrTooLong},
		{"negative id", []int64{0, -1, 0}, style, 1, ErrBadID},
		{"id past vocab", []int64{0, 178, 0}, style, 1, ErrBadID},
		{"short style", []int64{0, 50, 0}, style[:128], 1, ErrBadStyle},
		{"NaN style", []int64{0, 50, 0}, nan, 1, ErrBadStyle},
		{"zero speed", []int64{0, 50, 0}, style, 0, ErrBadSpeed},
		{"NaN speed", []int64{0, 50, 0}, style, float32(math.NaN()), ErrBadSpeed},
		{"Inf speed", []int64{0, 50, 0}, style, float32(math.Inf(1)), ErrBadSpeed},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := m.check(c.ids, c.style, c.speed); !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

func TestVoiceMix(t *testing.T) {
	ramp := func(v float32) []float32 {
		t := make([]float32, VoiceRows*StyleSize)
		for i := range t {
			t[i] = v
		}
		return t
	}
	vs, err := NewVoicesFromTables(map[string][]float32{"af_one": ramp(1), "am_three": ramp(3)})
	if err != nil {
		t.Fatal(err)
	}
	if got := vs.Names(); !slices.Equal(got, []string{"af_one", "am_three"}) {
		t.Fatalf("names %v", got)
	}
	for _, c := range []struct {
		spec string
		want float32
		err  error
	}{
		{"af_one", 1, nil},
		{"af_one,am_three", 2, nil},
		{"af_one:3,am_three:1", 1.5, nil},
		{" am_three : 2 , af_one:2 ", 2, nil},
		{"af_two", 0, ErrUnknownVoice},
		{"af_one,", 0, ErrBadVoiceSpec},
		{"af_one:0", 0, ErrBadVoiceSpec},
		{"af_one:x", 0, ErrBadVoiceSpec},
		{"af_one:NaN", 0, ErrBadVoiceSpec},
		{"", 0, ErrBadVoiceSpec},
	} {
		v, err := vs.Voice(c.spec)
		if !errors.Is(err, c.err) {
			t.Errorf("%q: error %v, want %v", c.spec, err, c.err)
			continue
		}
		if err != nil {
			continue
		}
		for _, n := range []int{-5, 0, 14, 509, 600} {
			st := v.Style(n)
			if len(st) != StyleSize || math.Abs(float64(st[0]-c.want)) > 1e-6 {
				t.Errorf("%q row %d: %d values, first %v, want %v", c.spec, n, len(st), st[0], c.want)
			}
		}
	}
	if _, err := NewVoicesFromTables(map[string][]float32{"short": make([]float32, 10)}); err == nil {
		t.Error("a short table was accepted")
	}
}

func TestSpeakStream(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	m := loadTestModel(t)
	g := loadGolden(t, "hello_af_heart")
	vs, err := NewVoicesFromTables(map[string][]float32{"af_test": voiceWithRow(len(g.ids)-2, g.style)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vs.Voice("af_test")
	if err != nil {
		t.Fatal(err)
	}
	ph, _ := vocab.Decode(g.ids)
	chunks := func(yield func(g2p.Chunk, error) bool) {
		_ = yield(g2p.Chunk{Text: "Hello world.", Phonemes: ph, IDs: g.ids}, nil) &&
			yield(g2p.Chunk{}, errors.New("front-end failed"))
	}
	var got [][]float32
	var last error
	for s, err := range m.Speak(context.Background(), chunks, v, 1, 0) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, s.Samples)
	}
	if len(got) != 1 || len(got[0]) != len(g.waveform) {
		t.Fatalf("%d pieces", len(got))
	}
	if last == nil || last.Error() != "front-end failed" {
		t.Fatalf("the chunks' error was not passed on: %v", last)
	}
	if p := signalcmp.Pearson(got[0], g.waveform); p < 0.99 {
		t.Fatalf("Pearson %.4f with the golden", p)
	}
}

// voiceWithRow is a voice table whose row n is style (others zero).
func voiceWithRow(n int, style []float32) []float32 {
	t := make([]float32, VoiceRows*StyleSize)
	copy(t[n*StyleSize:], style)
	return t
}

func TestWarm(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	m := loadTestModel(t)
	if err := m.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Each of Warm's tokens lasts one frame, and there are more than 8
	// (see warmIDs).
	tr, err := m.warmTrace(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if F := frames(tr.Durations); F != len(warmIDs) || F <= 8 {
		t.Errorf("Warm speaks %d frames for %d tokens (%v), want one each and more than 8", F, len(warmIDs), tr.Durations)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Warm(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled warm-up: %v", err)
	}
}

// TestWeightPagesReleased: after an utterance the fp32 file's pages are
// no longer resident but for the few the generator reads in place (its
// style projections): the packed weights' pages were released as they were
// packed, the rest before the generator ran. All 325 MB stayed before.
func TestWeightPagesReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	if runtime.GOOS != "linux" {
		t.Skip("pages are released on Linux only")
	}
	if gemm.Default().ConvPath() == "go" {
		t.Skip("convolutions read their weights in place on this CPU (no packing microkernel)")
	}
	m := loadTestModel(t)
	g := loadGolden(t, "hello_am_michael")
	if _, err := m.Synthesize(context.Background(), g.ids, g.style, g.speed); err != nil {
		t.Fatal(err)
	}
	var total, resident int
	for name, w := range m.w.tensors {
		b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w.data))), 4*len(w.data))
		n, err := filepages.Resident(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		total += len(b)
		resident += n
	}
	t.Logf("%.1f of %.1f MB of weights resident", float64(resident)/1e6, float64(total)/1e6)
	if resident > total/10 {
		t.Errorf("%d of %d bytes of weights resident after an utterance, want at most a tenth", resident, total)
	}
}

func TestTooManyFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the text stage")
	}
	m := loadTestModel(t)
	g := loadGolden(t, "fox_af_heart")
	// At a hundredth of the speed the fox sentence would last over 5 minutes.
	_, err := m.Synthesize(context.Background(), g.ids, g.style, 0.01)
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("error %v, want ErrTooLong", err)
	}
}

func TestConcurrentSynthesize(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	m := loadTestModel(t)
	g := loadGolden(t, "hello_am_michael")
	want, err := m.Synthesize(context.Background(), g.ids, g.style, g.speed)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]float32, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for i := range got {
		go func() {
			got[i], errs[i] = m.Synthesize(context.Background(), g.ids, g.style, g.speed)
			done <- i
		}()
	}
	<-done
	<-done
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(got[i]) != len(want) || signalcmp.Pearson(got[i], want) < 0.9999 {
			t.Fatalf("concurrent call %d differs from a lone one", i)
		}
	}
}
