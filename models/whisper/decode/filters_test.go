package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// masked lists the ids a filter set to −Inf as ranges of consecutive ids
// (<|notimestamps|> and the timestamps after it make one range).
func masked(logits []float32) [][2]int {
	var out [][2]int
	for i, v := range logits {
		if !math.IsInf(float64(v), -1) {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == i-1 {
			out[n-1][1] = i
		} else {
			out = append(out, [2]int{i, i})
		}
	}
	return out
}

func flat() []float32 { return make([]float32, fakeSize) }

var prefix3 = []int32{tSOT, tEN, tTranscribe}

func seq(sampled ...int32) []int32 { return slices.Concat(prefix3, sampled) }

func TestSuppressBlank(t *testing.T) {
	sp := fakeVocab{}.Specials()
	f := SuppressBlank(&sp, 3)
	l := flat()
	f.Apply(l, seq())
	if got, want := masked(l), [][2]int{{tSpace, tSpace}, {tEOT, tEOT}}; !slices.Equal(got, want) {
		t.Errorf("first position: masked %v, want %v", got, want)
	}
	l = flat()
	f.Apply(l, seq(3))
	if got := masked(l); len(got) != 0 {
		t.Errorf("second position: masked %v, want nothing", got)
	}
}

func TestSuppressTokens(t *testing.T) {
	l := flat()
	SuppressTokens([]int32{2, 5, 6}).Apply(l, seq(1, 2))
	if got, want := masked(l), [][2]int{{2, 2}, {5, 6}}; !slices.Equal(got, want) {
		t.Errorf("masked %v, want %v", got, want)
	}
}

// TestTimestampRules checks OpenAI's pairing, monotonic and first-position
// rules; timestamps get low logits so that the probability rule (tested
// apart) stays quiet.
func TestTimestampRules(t *testing.T) {
	sp := fakeVocab{}.Specials()
	last := int(tTS + 1500)
	const lowText = -100 // text logits that keep the probability rule quiet
	for _, c := range []struct {
		name   string
		tokens []int32
		want   [][2]int
	}{
		{"first position: timestamp ≤ 1.00 s only", seq(),
			[][2]int{{0, tNoTimestamps}, {int(ts(1.00)) + 1, last}}},
		{"after text: later timestamp or text", seq(ts(0.40), 3),
			[][2]int{{tNoTimestamps, int(ts(0.40))}}},
		{"after a segment's end: timestamp ≥ it or EOT", seq(ts(0.40), 3, ts(1.20)),
			[][2]int{{0, tEOT - 1}, {tNoTimestamps, int(ts(1.20)) - 1}}},
		{"after a pair: text only", seq(ts(0.40), 3, ts(1.20), ts(1.20)),
			[][2]int{{tNoTimestamps, last}}},
		{"lone first timestamp counts as a pair", seq(ts(0.00)),
			[][2]int{{tNoTimestamps, last}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := flat()
			for i := range tEOT {
				l[i] = 0
			}
			for i := tTS; i < fakeSize; i++ {
				l[i] = lowText // timestamps unlikely: the probability rule stays off
			}
			TimestampRules(&sp, 3, 50).Apply(l, c.tokens)
			if got := masked(l); !slices.Equal(got, c.want) {
				t.Errorf("masked %v, want %v", got, c.want)
			}
		})
	}
}

func TestTimestampProbabilityRule(t *testing.T) {
	sp := fakeVocab{}.Specials()
	for _, c := range []struct {
		name     string
		text, ts float32 // logit of text token 3 (others −Inf) and of every timestamp
		maskText bool
	}{
		// 1501 timestamps at logit 0 weigh log(1501) ≈ 7.31 together.
		{"timestamps together likelier", 7.2, 0, true},
		{"one text token likelier", 7.4, 0, false},
	} {
		for _, rules := range []Rules{OpenAI, TransformersJS} {
			l := flat()
			for i := range l {
				l[i] = negInf
			}
			l[3] = c.text
			for i := tTS; i < fakeSize; i++ {
				l[i] = c.ts
			}
			var f Filter
			if rules == OpenAI {
				f = TimestampRules(&sp, 3, -1)
			} else {
				f = TransformersJSTimestampRules(&sp, 3, -1)
			}
			f.Apply(l, seq(ts(0), 3, 4))
			if got := math.IsInf(float64(l[3]), -1); got != c.maskText {
				t.Errorf("%s, %v: text masked = %v, want %v", c.name, rules, got, c.maskText)
			}
		}
	}
}

// TestTransformersJSTimestampRules: the golden README's rules 1–4.
func TestTransformersJSTimestampRules(t *testing.T) {
	sp := fakeVocab{}.Specials()
	last := int(tTS + 1500)
	for _, c := range []struct {
		name   string
		tokens []int32
		want   [][2]int
	}{
		// Rule 3 with max_initial_timestamp_index 1; text stays allowed.
		{"first position", seq(), [][2]int{{tNoTimestamps, tNoTimestamps}, {int(ts(0.02)) + 1, last}}},
		// No monotonic rule: earlier timestamps stay allowed.
		{"after text", seq(ts(0.40), 3), [][2]int{{tNoTimestamps, tNoTimestamps}}},
		{"after a segment's end", seq(ts(0.40), 3, ts(1.20)), [][2]int{{0, tEOT - 1}, {tNoTimestamps, tNoTimestamps}}},
		{"after a pair", seq(ts(0.40), 3, ts(1.20), ts(1.20)), [][2]int{{tNoTimestamps, last}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := flat()
			for i := tTS; i < fakeSize; i++ {
				l[i] = -100
			}
			TransformersJSTimestampRules(&sp, 3, 1).Apply(l, c.tokens)
			if got := masked(l); !slices.Equal(got, c.want) {
				t.Errorf("masked %v, want %v", got, c.want)
			}
		})
	}
}

// TestLogSumExp checks the vector logsumexp against a float64 loop on rows
// shaped like Whisper's logits (suppressed tokens at −∞, a long tail of
// very unlikely ones), within 1e-6: log-probabilities feed avg_logprob and
// the timestamp rule's comparison.
func TestLogSumExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	row := func(n int, spread float64, suppressed int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * spread)
		}
		for range suppressed {
			x[rng.IntN(n)] = negInf
		}
		return x
	}
	ref := func(x []float32) float64 {
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		if math.IsInf(m, -1) {
			return m
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		return m + math.Log(s)
	}
	nan := float32(math.NaN())
	cases := []struct {
		name string
		x    []float32
	}{
		{"empty", nil},
		{"one", []float32{3}},
		{"all suppressed", []float32{negInf, negInf, negInf}},
		{"vocabulary, narrow", row(51865, 2, 100)},
		{"vocabulary, wide", row(51865, 30, 5000)},
		{"timestamps", row(1501, 5, 0)},
		{"one block and one more", row(1025, 1, 1)},
		{"far below the max", []float32{0, -80, -120, -1e30}},
		{"NaN", []float32{1, nan, 2}},
	}
	for _, c := range cases {
		got, want := logSumExp(c.x), ref(c.x)
		switch {
		case math.IsNaN(want) || math.IsInf(want, 0):
			if !(math.IsNaN(got) && math.IsNaN(want)) && got != want {
				t.Errorf("%s: logSumExp = %v, want %v", c.name, got, want)
			}
		case math.Abs(got-want) > 1e-6*max(1, math.Abs(want)):
			t.Errorf("%s: logSumExp = %.9f, want %.9f", c.name, got, want)
		}
	}
}
