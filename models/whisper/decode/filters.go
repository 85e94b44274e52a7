package decode

import (
	"math"

	"github.com/tensorforge/forge/kernels/cpu/vmath"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

var negInf = float32(math.Inf(-1))

// A Filter edits the next-token logits of one hypothesis in place before a
// token is chosen; tokens is the hypothesis so far, prefix included. Filters
// allocate nothing.
type Filter interface {
	Apply(logits []float32, tokens []int32)
}

// SuppressBlank forbids " " and <|endoftext|> at the first sampled position
// (sampleBegin is the prefix length), so that a transcript never starts
// blank. It is also transformers.js's begin_suppress_tokens [220, 50257].
func SuppressBlank(sp *tokenizer.Specials, sampleBegin int) Filter {
	return &suppressBlank{space: sp.Space, eot: sp.EOT, begin: sampleBegin}
}

type suppressBlank struct {
	space, eot int32
	begin      int
}

func (f *suppressBlank) Apply(logits []float32, tokens []int32) {
	if len(tokens) == f.begin {
		logits[f.space] = negInf
		logits[f.eot] = negInf
	}
}

// SuppressTokens forbids the given tokens everywhere.
func SuppressTokens(ids []int32) Filter { return suppressTokens(ids) }

type suppressTokens []int32

func (f suppressTokens) Apply(logits []float32, _ []int32) {
	for _, id := range f {
		logits[id] = negInf
	}
}

// TimestampRules is openai/whisper's ApplyTimestampRules for hypotheses whose
// sampled part starts at sampleBegin:
//   - <|notimestamps|> is never sampled;
//   - timestamps come in pairs, except directly before <|endoftext|>: after
//     a lone timestamp that ends text, only a timestamp or <|endoftext|> may
//     follow, after a pair only text;
//   - timestamps never decrease, and a segment's end is after its start;
//   - the first token is a timestamp, at most maxInitial steps of 0.02 s
//     (maxInitial < 0: no limit);
//   - when the timestamps together are more likely than any single text
//     token, a timestamp is sampled.
func TimestampRules(sp *tokenizer.Specials, sampleBegin, maxInitial int) Filter {
	return &timestampRules{sp: sp, begin: sampleBegin, maxInitial: maxInitial}
}

type timestampRules struct {
	sp         *tokenizer.Specials
	begin      int
	maxInitial int
}

func (f *timestampRules) Apply(logits []float32, tokens []int32) {
	tb, eot := int(f.sp.TimestampBegin), int(f.sp.EOT)
	logits[f.sp.NoTimestamps] = negInf

	seq := tokens[f.begin:]
	last, penultimate := pairState(seq, f.sp.TimestampBegin)
	if last {
		if penultimate {
			fill(logits[tb:], negInf) // has to be text
		} else {
			fill(logits[:eot], negInf) // cannot be text
		}
	}
	for i := len(seq) - 1; i >= 0; i-- {
		if seq[i] < f.sp.TimestampBegin {
			continue
		}
		// Timestamps must not decrease, and a new segment must not start
		// where the last one started.
		limit := int(seq[i])
		if !(last && !penultimate) {
			limit++
		}
		fill(logits[tb:min(limit, len(logits))], negInf)
		break
	}
	if len(tokens) == f.begin {
		fill(logits[:tb], negInf) // a transcript starts with a timestamp
		if f.maxInitial >= 0 {
			fill(logits[min(tb+f.maxInitial+1, len(logits)):], negInf)
		}
	}
	if logSumExp(logits[tb:]) > float64(maxOf(logits[:tb])) {
		fill(logits[:tb], negInf)
	}
}

// TransformersJSTimestampRules is transformers.js 3.8.1's
// WhisperTimeStampLogitsProcessor, which made the goldens: the pairing rule
// and the timestamp-probability rule as in TimestampRules, the first-position
// limit of maxInitial steps (< 0: none), but text allowed at the first
// position and no monotonic rule. The probability comparison repeats its
// float32 arithmetic.
func TransformersJSTimestampRules(sp *tokenizer.Specials, sampleBegin, maxInitial int) Filter {
	return &jsTimestampRules{sp: sp, begin: sampleBegin, maxInitial: maxInitial}
}

type jsTimestampRules struct {
	sp         *tokenizer.Specials
	begin      int
	maxInitial int
}

func (f *jsTimestampRules) Apply(logits []float32, tokens []int32) {
	tb, eot := int(f.sp.TimestampBegin), int(f.sp.EOT)
	logits[f.sp.NoTimestamps] = negInf

	last, penultimate := pairState(tokens[f.begin:], f.sp.TimestampBegin)
	if last {
		if penultimate {
			fill(logits[tb:], negInf)
		} else {
			fill(logits[:eot], negInf)
		}
	}
	if len(tokens) == f.begin && f.maxInitial >= 0 {
		fill(logits[min(tb+f.maxInitial+1, len(logits)):], negInf)
	}

	// log_softmax into a Float32Array, then log(Σ exp) over the timestamps
	// with each exp rounded to float32 and summed in float64, against the
	// largest text log-probability.
	m := float64(maxOf(logits))
	var sum float64
	for _, x := range logits {
		sum += math.Exp(float64(x) - m)
	}
	logSum := math.Log(sum)
	lp := func(x float32) float32 { return float32(float64(x) - m - logSum) }
	var tsSum float64
	for _, x := range logits[tb:] {
		tsSum += float64(float32(math.Exp(float64(lp(x)))))
	}
	maxText := math.Inf(-1)
	for _, x := range logits[:tb] {
		maxText = max(maxText, float64(lp(x)))
	}
	if math.Log(tsSum) > maxText {
		fill(logits[:tb], negInf)
	}
}

// pairState reports whether the last and the second-to-last sampled tokens
// are timestamps; a sequence shorter than 2 counts as having a timestamp
// second-to-last, as in both reference implementations.
func pairState(seq []int32, tb int32) (last, penultimate bool) {
	n := len(seq)
	last = n >= 1 && seq[n-1] >= tb
	penultimate = n < 2 || seq[n-2] >= tb
	return last, penultimate
}

func fill(x []float32, v float32) { vmath.Fill(x, v) }

// maxOf returns the largest value of x that is not NaN (-Inf when there is
// none). The vector maximum runs first: the logits rarely hold a NaN, and
// a step on a GPU waits for the host's pass over its 51,865 logits.
func maxOf(x []float32) float32 {
	if m := vmath.Max(x); m == m {
		return m
	}
	m := negInf
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// logSumExp returns log Σ exp(x) in float64; -Inf for an empty or all -Inf x.
// The exponentials are float32 vector ones (vmath, within 2 ulp) summed in
// float64, a block on the stack at a time: float64 math.Exp over Whisper's
// 51,865 logits cost ~0.4 ms a token, more than a decoder step on the GPU,
// and greedy decoding takes one per token for the sampled token's
// log-probability.
func logSumExp(x []float32) float64 {
	m := vmath.Max(x) // NaN if x holds one, and so is the sum
	if math.IsInf(float64(m), -1) {
		return float64(m)
	}
	var block [1024]float32
	var s float64
	for len(x) > 0 {
		n := min(len(x), len(block))
		vmath.ExpSub(block[:n], x[:n], m)
		s += vmath.SumF64(block[:n])
		x = x[n:]
	}
	return float64(m) + math.Log(s)
}

// logSoftmaxAt returns log softmax(x)[i] in float64.
func logSoftmaxAt(x []float32, i int) float64 {
	return float64(x[i]) - logSumExp(x)
}
