package kokoro

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// TestSpeakStreamedJoin streams the golden sentences with the default
// first piece, and after a little audio (Streaming.Lead), and compares
// with the unsplit synthesis: the same length, each stretch sounding like
// the unsplit synthesis of the same samples, and the pause at each join
// as long as the unsplit one within ±20 ms. "Sounding like" is a
// log-spectral RMS distance ≤ 0.35, the int8 artifact's bar (TestInt8):
// the generator's instance norms see the stretch's statistics instead of
// the utterance's, which moves every sample's phase (rel L2 0.3–0.8) but
// not the spectrum more than the CPU's own kernel choices do (0.27
// between the Go and OpenBLAS products on the paragraph). After audio
// longer than half the chunk, the chunk comes whole: SpeakChunk's samples.
func TestSpeakStreamedJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesis takes seconds")
	}
	ctx := context.Background()
	m := loadTestModel(t)
	for _, name := range []string{"fox_af_heart", "fox_am_michael", "question_af_heart", "question_am_michael"} {
		g := loadGolden(t, name)
		want, err := m.Synthesize(ctx, g.ids, g.style, g.speed)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name   string
			s      Streaming
			pieces int // at least
		}{
			{"first piece", Streaming{FirstTokens: DefaultFirstTokens}, 2},
			{"after 0.75 s", Streaming{Lead: SampleRate * 3 / 4}, 2},
			{"after a longer chunk", Streaming{Lead: len(want)}, 1},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				var pieces [][]float32
				for pcm, err := range m.streamed(ctx, g.ids, g.style, g.speed, c.s) {
					if err != nil {
						t.Fatal(err)
					}
					pieces = append(pieces, pcm)
				}
				if len(pieces) < c.pieces {
					t.Fatalf("%d pieces, want at least %d", len(pieces), c.pieces)
				}
				got := slices.Concat(pieces...)
				if len(got) != len(want) {
					t.Fatalf("%d samples streamed, %d unsplit", len(got), len(want))
				}
				if len(pieces) == 1 {
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("sample %d of a chunk handed out whole is %v, unsplit %v", i, got[i], want[i])
						}
					}
					return
				}
				from := 0
				for k, p := range pieces {
					to := from + len(p)
					ls := logSpectral(t, got[from:to], want[from:to])
					msg := fmt.Sprintf("piece %d: %.2f–%.2f s of %.2f s, log-spectral RMS %.3f", k, float64(from)/SampleRate, float64(to)/SampleRate, float64(len(want))/SampleRate, ls)
					if k < len(pieces)-1 {
						join := to + joinFadeSamples
						gotPause, wantPause := pauseAt(got, join), pauseAt(want, join)
						msg += fmt.Sprintf("; pause at its end %.1f ms streamed, %.1f ms unsplit", 1000*gotPause, 1000*wantPause)
						if d := math.Abs(gotPause - wantPause); d > 0.020 {
							t.Errorf("piece %d: pause at the join %.1f ms streamed vs %.1f ms unsplit: differs by more than 20 ms", k, 1000*gotPause, 1000*wantPause)
						}
					}
					t.Log(msg)
					if !(ls <= 0.35) {
						t.Errorf("piece %d: log-spectral RMS %.3f > 0.35", k, ls)
					}
					from = to
				}
			})
		}
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

// TestPlanJoins checks where a chunk's stretches meet, on made-up ids and
// durations: nothing when not streamed, the first join where firstJoin
// puts it, each later stretch within growth times the audio before it
// and in the middle of a space, and no stretch shorter than
// minStretchFrames.
func TestPlanJoins(t *testing.T) {
	sp, ok := vocab.ID(' ')
	a, ok2 := vocab.ID('a')
	if !ok || !ok2 {
		t.Fatal("no id for ' ' or 'a'")
	}
	// pad, then 40 words "a a a ␣" of 4 frames a token, then pad: the
	// spaces' middles are at 10 + 16w + 14.
	ids := []int64{0}
	dur := []int64{10}
	for range 40 {
		ids = append(ids, a, a, a, sp)
		dur = append(dur, 4, 4, 4, 4)
	}
	ids = append(ids, a, 0)
	dur = append(dur, 4, 10)
	total := frames(dur) // 664
	space := func(w int) int { return 10 + 16*w + 14 }
	for _, tc := range []struct {
		name string
		s    Streaming
		want []int
	}{
		{"not streamed", Streaming{}, nil},
		// The first join is the last space within 16 tokens (word 3),
		// then each stretch ends at the last space within twice the
		// audio before it: 72 → ≤ 216, 216 → ≤ 648 (the rest, 664, is
		// within reach plus a minimum stretch).
		{"first piece", Streaming{FirstTokens: 16}, []int{space(3), space(12)}},
		// 20 → ≤ 40, 60 → ≤ 160, 172 → ≤ 496, then the rest.
		{"after 20 frames", Streaming{Lead: 20 * SamplesPerFrame}, []int{space(1), space(8), space(29)}},
		{"after a long chunk", Streaming{Lead: total * SamplesPerFrame}, nil},
		{"first piece of a short chunk", Streaming{FirstTokens: 200}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planJoins(ids, dur, tc.s)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("planJoins = %v, want %v", got, tc.want)
			}
			prev, before := 0, tc.s.Lead/SamplesPerFrame
			for k, j := range append(got, total) {
				if j-prev < minStretchFrames {
					t.Errorf("stretch %d–%d shorter than %d frames", prev, j, minStretchFrames)
				}
				if k < len(got) && (k > 0 || tc.s.Lead > 0) && j-prev > growth*before {
					t.Errorf("stretch %d–%d longer than %d times the %d frames before it", prev, j, growth, before)
				}
				before += j - prev
				prev = j
			}
		})
	}
}
