package vad_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/vad"
)

// referenceSegments is a line-by-line transcription of get_speech_timestamps
// in snakers4/silero-vad (src/silero_vad/utils_vad.py) after the
// probabilities are computed: the whole-list loop, then the padding pass
// over the finished list. It is deliberately naive (no streaming) so that it
// checks the Segmenter independently. Python's dict-as-flag and 0-as-unset
// idioms are kept as they are.
func referenceSegments(probs []float32, n int64, rate int, o vad.Options) []vad.Segment {
	w := int64(512)
	if rate == 8000 {
		w = 256
	}
	sr := float64(rate)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	minSpeech := sr * ms(o.MinSpeech) / 1000
	pad := sr * ms(o.SpeechPad) / 1000
	maxSpeech := math.Inf(1)
	if o.MaxSpeech > 0 {
		maxSpeech = sr*o.MaxSpeech.Seconds() - float64(w) - 2*pad
	}
	minSilence := sr * ms(o.MinSilence) / 1000
	minSilenceAtMax := sr * ms(o.MinSilenceAtMaxSpeech) / 1000
	neg := o.NegThreshold
	if neg == 0 {
		neg = max(o.Threshold-0.15, 0.01)
	}
	type speech struct {
		start, end int64
		has        bool
	}
	type pe struct{ end, dur int64 }
	triggered := false
	var speeches []speech
	cur := speech{}
	var tempEnd, prevEnd, nextStart int64
	var possible []pe
	for i, p32 := range probs {
		p := float64(p32)
		pos := w * int64(i)
		if p >= o.Threshold && tempEnd != 0 {
			sil := pos - tempEnd
			if float64(sil) > minSilenceAtMax {
				possible = append(possible, pe{tempEnd, sil})
			}
			tempEnd = 0
			if nextStart < prevEnd {
				nextStart = pos
			}
		}
		if p >= o.Threshold && !triggered {
			triggered = true
			cur = speech{start: pos, has: true}
			continue
		}
		if triggered && float64(pos-cur.start) > maxSpeech {
			if len(possible) > 0 {
				var dur int64
				if !o.SplitAtLastSilence {
					best := possible[0]
					for _, c := range possible[1:] {
						if c.dur > best.dur {
							best = c
						}
					}
					prevEnd, dur = best.end, best.dur
				} else {
					prevEnd, dur = possible[len(possible)-1].end, possible[len(possible)-1].dur
				}
				cur.end = prevEnd
				speeches = append(speeches, cur)
				cur = speech{}
				nextStart = prevEnd + dur
				if nextStart < prevEnd+pos {
					cur = speech{start: nextStart, has: true}
				} else {
					triggered = false
				}
				var kept []pe
				for _, c := range possible {
					if c.end > nextStart {
						kept = append(kept, c)
					}
				}
				possible = kept
				prevEnd, nextStart, tempEnd = 0, 0, 0
			} else {
				cur.end = pos
				speeches = append(speeches, cur)
				cur = speech{}
				prevEnd, nextStart, tempEnd = 0, 0, 0
				triggered = false
				possible = nil
				continue
			}
		}
		if p < neg && triggered {
			if tempEnd == 0 {
				tempEnd = pos
			}
			if float64(pos-tempEnd) < minSilence {
				continue
			}
			cur.end = tempEnd
			if float64(cur.end-cur.start) > minSpeech {
				speeches = append(speeches, cur)
			}
			cur = speech{}
			prevEnd, nextStart, tempEnd = 0, 0, 0
			triggered = false
			possible = nil
			continue
		}
	}
	if cur.has && float64(n-cur.start) > minSpeech {
		cur.end = n
		speeches = append(speeches, cur)
	}
	for i := range speeches {
		s := &speeches[i]
		if i == 0 {
			s.start = int64(math.Max(0, float64(s.start)-pad))
		}
		if i != len(speeches)-1 {
			sil := speeches[i+1].start - s.end
			if float64(sil) < 2*pad {
				s.end += sil / 2
				speeches[i+1].start = max(0, speeches[i+1].start-sil/2)
			} else {
				s.end = int64(math.Min(float64(n), float64(s.end)+pad))
				speeches[i+1].start = int64(math.Max(0, float64(speeches[i+1].start)-pad))
			}
		} else {
			s.end = int64(math.Min(float64(n), float64(s.end)+pad))
		}
	}
	out := make([]vad.Segment, len(speeches))
	for i, s := range speeches {
		out[i] = vad.Segment{Start: s.start, End: s.end}
	}
	return out
}

func segs(pairs ...int64) []vad.Segment {
	out := make([]vad.Segment, len(pairs)/2)
	for i := range out {
		out[i] = vad.Segment{Start: pairs[2*i], End: pairs[2*i+1]}
	}
	return out
}

// Expected segments of the golden probabilities, produced by running the
// post-processing part of get_speech_timestamps from snakers4/silero-vad
// (commit 0a7d1f6, Python) on the exact float32 values of
// ../shared/golden/vad/*.safetensors.
var referenceCases = []struct {
	clip  string
	total int64
	name  string
	opt   func(*vad.Options)
	want  []vad.Segment
}{
	{"silero_test", 960000, "defaults", func(*vad.Options) {}, segs(
		32, 32736, 42528, 75232, 79392, 110048, 149024, 213472, 216608, 241632, 245280, 253920,
		260640, 286688, 293920, 313824, 325152, 521696, 523296, 569824, 571936, 602080, 607264, 623072,
		637984, 692704, 697888, 714208, 720416, 749024, 781344, 799712, 817184, 867808, 871456, 918496,
		920096, 953312)},
	{"silero_test", 960000, "max 2 s", func(o *vad.Options) { o.MaxSpeech = 2 * time.Second }, segs(
		32, 31712, 42528, 74208, 79392, 111072, 149024, 180480, 180480, 211936, 216608, 241632,
		245280, 253920, 260640, 286688, 293920, 313824, 325152, 356608, 356608, 387840, 387840, 419072,
		419072, 450304, 450304, 457696, 458784, 490240, 490240, 521696, 523296, 554752, 554752, 569824,
		571936, 603616, 607264, 623072, 637984, 669440, 669440, 692704, 697888, 714208, 720416, 749024,
		781344, 799712, 817184, 848640, 848640, 867808, 871456, 902912, 902912, 918496, 920096, 951776)},
	{"silero_test", 960000, "pad 100 ms, silence 50 ms", func(o *vad.Options) {
		o.SpeechPad, o.MinSilence = 100*time.Millisecond, 50*time.Millisecond
	}, segs(
		0, 33856, 41408, 76352, 78272, 111168, 147904, 165120, 165120, 214592, 215488, 229632,
		229632, 242752, 244160, 255040, 259520, 287808, 292800, 303360, 303360, 314944, 324032, 458240,
		458240, 522496, 522496, 570880, 570880, 603200, 606144, 624192, 636864, 693824, 696768, 715328,
		719296, 750144, 780224, 800832, 816064, 856064, 856064, 868928, 870336, 919296, 919296, 954432)},
	{"silero_test", 960000, "max 6 s, silence 1.5 s, longest pause", func(o *vad.Options) {
		o.MaxSpeech, o.MinSilence = 6*time.Second, 1500*time.Millisecond
	}, segs(
		32, 32736, 42528, 110048, 149024, 213472, 216608, 286688, 293920, 313824, 325152, 420608,
		420608, 457696, 458784, 521696, 523296, 602080, 607264, 623072, 637984, 714208, 720416, 749024,
		781344, 799712, 817184, 867808, 871456, 960000)},
	{"silero_test", 960000, "max 6 s, silence 1.5 s, last pause", func(o *vad.Options) {
		o.MaxSpeech, o.MinSilence, o.SplitAtLastSilence = 6*time.Second, 1500*time.Millisecond, true
	}, segs(
		32, 75232, 79392, 110048, 149024, 213472, 216608, 286688, 293920, 313824, 325152, 420608,
		420608, 457696, 458784, 521696, 523296, 602080, 607264, 692704, 697888, 749024, 781344, 867808,
		871456, 960000)},
	{"jfk", 176000, "defaults", func(*vad.Options) {}, segs(
		5152, 36320, 52256, 71136, 86048, 122848, 130592, 169952)},
	{"jfk", 176000, "max 2 s", func(o *vad.Options) { o.MaxSpeech = 2 * time.Second }, segs(
		5152, 36832, 52256, 71136, 86048, 117504, 117504, 122848, 130592, 162048, 162048, 169952)},
	{"jfk", 176000, "max 6 s, silence 1.5 s, last pause", func(o *vad.Options) {
		o.MaxSpeech, o.MinSilence, o.SplitAtLastSilence = 6*time.Second, 1500*time.Millisecond, true
	}, segs(5152, 71136, 86048, 176000)},
}

// TestSegmentsGolden checks the segmenter, the whole-array form and the
// independent transcription against the reference library's output on the
// golden probabilities.
func TestSegmentsGolden(t *testing.T) {
	for _, c := range referenceCases {
		t.Run(c.clip+"/"+c.name, func(t *testing.T) {
			probs := goldenProbs(t, c.clip)
			o := vad.DefaultOptions()
			c.opt(&o)
			got, err := vad.Segments(probs, c.total, 16000, 512, o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Segments:\n got %v\nwant %v", got, c.want)
			}
			if ref := referenceSegments(probs, c.total, 16000, o); !slices.Equal(ref, c.want) {
				t.Errorf("test transcription disagrees with the reference output:\n got %v\nwant %v", ref, c.want)
			}
		})
	}
}

// TestSegmentsFromModel runs the model on silero_test.wav and segments its
// own probabilities: the result equals the reference segments of the golden
// probabilities (the decisions match chunk for chunk).
func TestSegmentsFromModel(t *testing.T) {
	m := testModel(t)
	samples := goldenAudio(t, "silero_test")
	probs, err := m.Probs(ctx(), samples, 16000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := vad.Segments(probs, int64(len(samples)), 16000, 512, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if want := referenceCases[0].want; !slices.Equal(got, want) {
		t.Errorf("segments of the model's probabilities:\n got %v\nwant %v", got, want)
	}
}

// randomProbs makes runs of speech-like and silence-like probabilities with
// values near both thresholds.
func randomProbs(r *rand.Rand, n int) []float32 {
	p := make([]float32, n)
	level := float32(0.1)
	for i := range p {
		if r.IntN(6) == 0 {
			level = []float32{0.02, 0.3, 0.349, 0.35, 0.4, 0.5, 0.6, 0.95}[r.IntN(8)]
		}
		p[i] = level
		if r.IntN(10) == 0 {
			p[i] = r.Float32()
		}
	}
	return p
}

// TestSegmenterMatchesReference compares the streaming segmenter, fed one
// probability at a time, with the naive transcription on random
// probabilities under many option sets, and checks that every segment is
// emitted no later than Flush and in order.
func TestSegmenterMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		o := vad.DefaultOptions()
		o.Threshold = []float64{0.5, 0.3, 0.8}[r.IntN(3)]
		if r.IntN(3) == 0 {
			o.NegThreshold = o.Threshold * r.Float64()
		}
		o.MinSpeech = time.Duration(r.IntN(600)) * time.Millisecond
		o.MinSilence = time.Duration(r.IntN(400)) * time.Millisecond
		o.SpeechPad = time.Duration(r.IntN(200)) * time.Millisecond
		if r.IntN(2) == 0 {
			o.MaxSpeech = time.Duration(200+r.IntN(3000)) * time.Millisecond
		}
		o.MinSilenceAtMaxSpeech = time.Duration(r.IntN(200)) * time.Millisecond
		o.SplitAtLastSilence = r.IntN(2) == 0
		rate, w := 16000, 512
		if r.IntN(4) == 0 {
			rate, w = 8000, 256
		}
		n := 1 + r.IntN(300)
		probs := randomProbs(r, n)
		total := int64(w*(n-1) + 1 + r.IntN(w))
		want := referenceSegments(probs, total, rate, o)
		s, err := vad.NewSegmenter(rate, w, o)
		if err != nil {
			t.Fatal(err)
		}
		var got []vad.Segment
		for _, p := range probs {
			got = s.Push(p, got)
		}
		got = s.Flush(total, got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%+v, rate %d, %d chunks, %d samples):\n got %v\nwant %v\nprobs %v", trial, o, rate, n, total, got, want, probs)
		}
	}
}

// TestSegmenterEmitsEarly checks latency: with the defaults a segment is
// final once the 100 ms of silence that closes it have been seen, long
// before the stream ends.
func TestSegmenterEmitsEarly(t *testing.T) {
	s, err := vad.NewSegmenter(16000, 512, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []vad.Segment
	for i := range 100 {
		p := float32(0.05)
		if i >= 10 && i < 30 {
			p = 0.9
		}
		got = s.Push(p, got)
		if len(got) > 0 {
			// silence starts at chunk 30; 100 ms = 1600 samples → chunk 34
			if i != 34 {
				t.Errorf("segment emitted after chunk %d, want 34", i)
			}
			break
		}
	}
	want := []vad.Segment{{Start: 10*512 - 480, End: 30*512 + 480}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSegmenterEmitsBeforeNextEnds: a segment followed closely by another
// (a gap under twice the padding, which the two share) is final once the
// next one is sure to be kept — MinSpeech after its start — not when the
// next one ends: a live caller gets an utterance while the next is spoken.
func TestSegmenterEmitsBeforeNextEnds(t *testing.T) {
	o := vad.DefaultOptions()
	o.MinSpeech, o.MinSilence, o.SpeechPad = 250*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	s, err := vad.NewSegmenter(16000, 512, o)
	if err != nil {
		t.Fatal(err)
	}
	speech := func(i int) bool { return i >= 10 && i < 30 || i >= 36 && i < 80 }
	var got []vad.Segment
	emittedAt := -1
	for i := range 120 {
		p := float32(0.05)
		if speech(i) {
			p = 0.9
		}
		got = s.Push(p, got)
		if len(got) > 0 && emittedAt < 0 {
			emittedAt = i
		}
	}
	got = s.Flush(120*512, got)
	// The second segment starts at chunk 36 (sample 18432); MinSpeech is
	// 4000 samples, so chunk 44 is the first whose samples prove it longer.
	if emittedAt != 44 {
		t.Errorf("first segment emitted after chunk %d, want 44", emittedAt)
	}
	gap := int64(36*512 - 30*512)
	want := []vad.Segment{{Start: 10*512 - 3200, End: 30*512 + gap/2}, {Start: 36*512 - gap/2, End: 80*512 + 3200}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if ref := referenceSegments(probsOf(120, speech), 120*512, 16000, o); !slices.Equal(ref, want) {
		t.Errorf("reference gives %v, want %v", ref, want)
	}
}

// probsOf returns n chunk probabilities: 0.9 where speech(i), else 0.05.
func probsOf(n int, speech func(int) bool) []float32 {
	p := make([]float32, n)
	for i := range p {
		p[i] = 0.05
		if speech(i) {
			p[i] = 0.9
		}
	}
	return p
}

func TestSegmenterAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	s, err := vad.NewSegmenter(16000, 512, vad.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]vad.Segment, 0, 4)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		p := float32(0.1)
		if i%40 < 20 {
			p = 0.9
		}
		i++
		dst = s.Push(p, dst[:0])
	})
	if allocs != 0 {
		t.Errorf("Push allocates %v times per chunk", allocs)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*vad.Options)
	}{
		{"zero threshold", func(o *vad.Options) { o.Threshold = 0 }},
		{"threshold above 1", func(o *vad.Options) { o.Threshold = 1.5 }},
		{"NaN threshold", func(o *vad.Options) { o.Threshold = math.NaN() }},
		{"negative threshold above threshold", func(o *vad.Options) { o.NegThreshold = 0.6 }},
		{"negative padding", func(o *vad.Options) { o.SpeechPad = -time.Millisecond }},
		{"negative max speech", func(o *vad.Options) { o.MaxSpeech = -time.Second }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := vad.DefaultOptions()
			c.edit(&o)
			if _, err := vad.NewSegmenter(16000, 512, o); !errors.Is(err, vad.ErrBadOptions) {
				t.Errorf("NewSegmenter: %v, want ErrBadOptions", err)
			}
		})
	}
	if _, err := vad.Segments(make([]float32, 3), 512*5, 16000, 512, vad.DefaultOptions()); !errors.Is(err, vad.ErrBadOptions) {
		t.Errorf("Segments with too few probabilities: %v, want ErrBadOptions", err)
	}
}
