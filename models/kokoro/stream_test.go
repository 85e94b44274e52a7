package kokoro

import (
	"context"
	"math"
	"testing"

	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// TestSpeakStreamedJoin streams the golden sentences with the default
// first piece and compares with the unsplit synthesis: the same length,
// the same samples from the end of the crossfade on, the window's head
// sounding like the unsplit head, and the pause at the join as long as the
// unsplit one within ±20 ms. "Sounding like" is a log-spectral RMS
// distance ≤ 0.35, the int8 artifact's bar (TestInt8): the generator's
// instance norms see the window's statistics instead of the utterance's,
// which moves every sample's phase (rel L2 0.3–0.8) but not the spectrum
// more than the CPU's own kernel choices do (0.27 between the Go and
// OpenBLAS products on the paragraph).
func TestSpeakStreamedJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	ctx := context.Background()
	m := loadTestModel(t)
	for _, name := range []string{"fox_af_heart", "fox_am_michael", "question_af_heart", "question_am_michael"} {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			want, err := m.Synthesize(ctx, g.ids, g.style, g.speed)
			if err != nil {
				t.Fatal(err)
			}
			var pieces [][]float32
			for pcm, err := range m.streamed(ctx, g.ids, g.style, g.speed, DefaultFirstTokens) {
				if err != nil {
					t.Fatal(err)
				}
				pieces = append(pieces, pcm)
			}
			if len(pieces) != 2 {
				t.Fatalf("%d pieces, want 2", len(pieces))
			}
			head := len(pieces[0])
			got := append(append([]float32(nil), pieces[0]...), pieces[1]...)
			if len(got) != len(want) {
				t.Fatalf("%d samples streamed, %d unsplit", len(got), len(want))
			}
			for i := head + 2*joinFadeSamples; i < len(want); i++ {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("sample %d after the join is %v, unsplit %v", i, got[i], want[i])
				}
			}
			ls := logSpectral(t, got[:head], want[:head])
			join := head + joinFadeSamples
			gotPause, wantPause := pauseAt(got, join), pauseAt(want, join)
			t.Logf("first piece %.2f s of %.2f s; head log-spectral RMS %.3f; pause at the join %.1f ms streamed, %.1f ms unsplit",
				float64(join)/SampleRate, float64(len(want))/SampleRate, ls, 1000*gotPause, 1000*wantPause)
			if !(ls <= 0.35) {
				t.Errorf("head log-spectral RMS %.3f > 0.35", ls)
			}
			if d := math.Abs(gotPause - wantPause); d > 0.020 {
				t.Errorf("pause at the join %.1f ms streamed vs %.1f ms unsplit: differs by more than 20 ms", 1000*gotPause, 1000*wantPause)
			}
		})
	}
}

// pauseAt measures the quiet time around sample at: how much of the
// 300 ms centred there lies in 5 ms frames whose RMS is below 1/30 of the
// utterance's loudest frame (about −30 dB), in seconds. Counting frames
// rather than one contiguous run keeps a frame hovering at the threshold
// from cutting a pause in two.
func pauseAt(x []float32, at int) float64 {
	const frame = SampleRate / 200
	n := len(x) / frame
	rms := make([]float64, n)
	var peak float64
	for f := range n {
		var s float64
		for _, v := range x[f*frame : (f+1)*frame] {
			s += float64(v) * float64(v)
		}
		rms[f] = math.Sqrt(s / frame)
		peak = max(peak, rms[f])
	}
	quiet := 0
	for f := max(0, at/frame-30); f < min(n, at/frame+30); f++ {
		if rms[f] < peak/30 {
			quiet++
		}
	}
	return float64(quiet*frame) / SampleRate
}

// TestFirstJoin checks where the first piece ends, on made-up ids and
// durations: in the middle of a space's frames, after clause punctuation
// when there is one within the limit, never before minFirstFrames, and
// not at all for short chunks or a zero limit.
func TestFirstJoin(t *testing.T) {
	id := func(r rune) int64 {
		v, ok := vocab.ID(r)
		if !ok {
			t.Fatalf("no id for %q", r)
		}
		return v
	}
	a, sp, comma := id('a'), id(' '), id(',')
	// pad a a ␣ a , ␣ a a ␣ a a pad: each token 4 frames, the pads 10.
	ids := []int64{0, a, a, sp, a, comma, sp, a, a, sp, a, a, 0}
	dur := []int64{10, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 10}
	for _, tc := range []struct {
		name      string
		ids, dur  []int64
		maxTokens int
		join      int
		ok        bool
	}{
		{name: "after the comma", ids: ids, dur: dur, maxTokens: 10, join: 10 + 4*5 + 2, ok: true},
		{name: "no comma within the limit", ids: ids, dur: dur, maxTokens: 5, join: 10 + 4*2 + 2, ok: true},
		{name: "too early", ids: ids, dur: []int64{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 40}, maxTokens: 10},
		{name: "short chunk", ids: ids, dur: dur, maxTokens: 11},
		{name: "no limit", ids: ids, dur: dur, maxTokens: 0},
		{name: "no space", ids: []int64{0, a, a, a, a, 0}, dur: []int64{30, 4, 4, 4, 4, 10}, maxTokens: 3},
		{name: "durations of another chunk", ids: ids, dur: dur[1:], maxTokens: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			join, ok := firstJoin(tc.ids, tc.dur, tc.maxTokens)
			if ok != tc.ok || join != tc.join {
				t.Errorf("firstJoin = %d, %v; want %d, %v", join, ok, tc.join, tc.ok)
			}
		})
	}
}
