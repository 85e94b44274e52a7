package decode

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"testing"
)

// randomModel gives text tokens 1..k and EOT pseudo-random logits that
// depend on the whole sequence; every other token gets junk (−Inf, or a very
// low finite value).
func randomModel(seed uint32, k int, junk float32) model {
	return func(seq []int32, l []float32) {
		for i := range l {
			l[i] = junk
		}
		h := fnv.New32a()
		fmt.Fprint(h, seed, seq)
		x := h.Sum32()
		for _, tok := range append(tokensUpTo(k), tEOT) {
			x = x*1664525 + 1013904223
			l[tok] = float32(x>>8)/float32(1<<24)*6 - 3
		}
	}
}

func tokensUpTo(k int) []int32 {
	var out []int32
	for i := 1; i <= k; i++ {
		out = append(out, int32(i))
	}
	return out
}

func beamOpts(size int, patience float64, penalty *float64, sampleLen int) Options {
	return Options{Language: "en", Rules: OpenAI, BeamSize: size, Patience: patience, LengthPenalty: penalty, SampleLen: sampleLen}
}

func score(sum float64, n int, penalty *float64) float64 {
	n = max(n, 1)
	if penalty == nil {
		return sum / float64(n)
	}
	return sum / math.Pow((5+float64(n))/6, *penalty)
}

// TestBeamSearchExhaustive: with beams enough to hold every hypothesis,
// beam search returns the brute-force best of all sequences: those that end
// within the step limit and those cut at it. 3 words and 4 steps give 81
// hypotheses of 4 words and 27 that end after 3; 108 beams keep them all.
// Other tokens get −1e4 and poison the hypotheses that take them, so that
// such junk sorts below every real one.
func TestBeamSearchExhaustive(t *testing.T) {
	const k, steps, beams = 3, 4, 108
	prefix := []int32{tSOT, tEN, tTranscribe, tNoTimestamps}
	for seed := uint32(0); seed < 10; seed++ {
		for _, penalty := range []*float64{nil, ptr(0.0), ptr(1.0)} {
			random := randomModel(seed, k, -1e4)
			m := func(seq []int32, l []float32) {
				random(seq, l)
				for _, tok := range seq[min(len(prefix), len(seq)):] {
					if tok > k {
						fill(l, -1e4)
					}
				}
			}
			res, err := Decode(context.Background(), &fakeDecoder{m: m}, fakeVocab{}, beamOpts(beams, 1000, penalty, steps))
			if err != nil {
				t.Fatal(err)
			}
			bestTokens, bestSum, best := []int32(nil), 0.0, math.Inf(-1)
			consider := func(toks []int32, sum float64) {
				if s := score(sum, len(toks), penalty); s > best {
					best, bestSum, bestTokens = s, sum, slices.Clone(toks)
				}
			}
			var walk func(seq []int32, sum float64)
			walk = func(seq []int32, sum float64) {
				n := len(seq) - len(prefix)
				if n == steps {
					consider(seq[len(prefix):], sum) // cut at the limit
					return
				}
				row := make([]float32, fakeSize)
				m(seq, row)
				norm := logSumExp(row)
				consider(seq[len(prefix):], sum+float64(row[tEOT])-norm)
				for _, tok := range tokensUpTo(k) {
					walk(append(slices.Clone(seq), tok), sum+float64(row[tok])-norm)
				}
			}
			walk(prefix, 0)
			if !slices.Equal(res.Tokens, bestTokens) || math.Abs(res.AvgLogProb-bestSum/float64(len(bestTokens)+1)) > 1e-9 {
				t.Errorf("seed %d penalty %v: beam %v (avg %v), brute force %v (avg %v)", seed, penalty, res.Tokens, res.AvgLogProb, bestTokens, bestSum/float64(len(bestTokens)+1))
			}
		}
	}
}

// TestBeamSearchFindsWhatGreedyMisses: the classic trap, where the likeliest
// first word leads nowhere good.
func TestBeamSearchFindsWhatGreedyMisses(t *testing.T) {
	m := func(seq []int32, l []float32) {
		for i := range l {
			l[i] = negInf
		}
		switch n := len(seq) - 4; {
		case n == 0:
			l[1], l[2] = 1, 0.9 // w1 a bit likelier than w2
		case n == 1 && seq[4] == 1:
			l[3], l[4], l[5] = 0, 0, 0 // after w1: three equal choices
		case n == 1 && seq[4] == 2:
			l[6] = 5 // after w2: sure
		default:
			l[tEOT] = 5
		}
	}
	greedy, err := Decode(context.Background(), &fakeDecoder{m: m}, fakeVocab{}, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	beam, err := Decode(context.Background(), &fakeDecoder{m: m}, fakeVocab{}, beamOpts(2, 0, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(greedy.Tokens, []int32{1, 3}) || !slices.Equal(beam.Tokens, []int32{2, 6}) {
		t.Errorf("greedy %v (want [1 3]), beam %v (want [2 6])", greedy.Tokens, beam.Tokens)
	}
}

// refBeamSearch is OpenAI's BeamSearchDecoder written as plainly as the
// Python: hypotheses keyed by their whole token sequence, no caches, every
// row recomputed from the sequence.
func refBeamSearch(m model, prefix []int32, size int, patience float64, penalty *float64, sampleLen int) ([]int32, float64) {
	key := func(s []int32) string { return fmt.Sprint(s) }
	type entry struct {
		seq   []int32
		score float64
	}
	maxCand := int(math.RoundToEven(float64(size) * patience))
	beams := make([][]int32, size)
	sums := make([]float64, size)
	for i := range beams {
		beams[i] = slices.Clone(prefix)
	}
	var finished []entry
	row := make([]float32, fakeSize)
	for range sampleLen {
		var order []string
		scores := map[string]entry{}
		for j, b := range beams {
			m(b, row)
			norm := logSumExp(row)
			idx := make([]int, len(row))
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(a, c int) bool { return row[idx[a]] > row[idx[c]] })
			for _, tok := range idx[:size+1] {
				s := append(slices.Clone(b), int32(tok))
				k := key(s)
				if _, ok := scores[k]; !ok {
					order = append(order, k)
				}
				scores[k] = entry{s, sums[j] + float64(row[tok]) - norm}
			}
		}
		sort.SliceStable(order, func(a, c int) bool { return scores[order[a]].score > scores[order[c]].score })
		var next [][]int32
		var nextSums []float64
		var newlyFinished []entry
		for _, k := range order {
			e := scores[k]
			if e.seq[len(e.seq)-1] == tEOT {
				newlyFinished = append(newlyFinished, e)
				continue
			}
			next = append(next, e.seq)
			nextSums = append(nextSums, e.score)
			if len(next) == size {
				break
			}
		}
		for _, e := range newlyFinished {
			if len(finished) >= maxCand {
				break
			}
			finished = append(finished, e)
		}
		beams, sums = next, nextSums
		if len(finished) >= maxCand || len(beams[0]) > TextContext {
			break
		}
	}
	if len(finished) < size {
		idx := make([]int, len(beams))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, c int) bool { return sums[idx[a]] < sums[idx[c]] })
		slices.Reverse(idx)
		for _, j := range idx {
			finished = append(finished, entry{append(slices.Clone(beams[j]), tEOT), sums[j]})
			if len(finished) >= size {
				break
			}
		}
	}
	var best []int32
	var bestSum float64
	bestScore := math.Inf(-1)
	for i, e := range finished {
		toks := e.seq[len(prefix):]
		toks = toks[:slices.Index(toks, tEOT)]
		if s := score(e.score, len(toks), penalty); i == 0 || s > bestScore {
			best, bestSum, bestScore = toks, e.score, s
		}
	}
	return best, bestSum
}

// TestBeamSearchMatchesReference compares with refBeamSearch on random
// models, including −Inf junk tokens that end up in the beams.
func TestBeamSearchMatchesReference(t *testing.T) {
	prefix := []int32{tSOT, tEN, tTranscribe, tNoTimestamps}
	for seed := uint32(0); seed < 30; seed++ {
		for _, c := range []struct {
			size     int
			patience float64
			penalty  *float64
			junk     float32
		}{
			{1, 0, nil, negInf}, {2, 0, nil, negInf}, {3, 2, ptr(0.6), negInf},
			{5, 0, nil, -1e4}, {4, 1.5, ptr(0.0), negInf}, {6, 0, nil, negInf},
		} {
			m := randomModel(seed, 4, c.junk)
			d := &fakeDecoder{m: m}
			res, err := Decode(context.Background(), d, fakeVocab{}, beamOpts(c.size, c.patience, c.penalty, 8))
			if err != nil {
				t.Fatal(err)
			}
			want, wantSum := refBeamSearch(m, prefix, c.size, max(c.patience, 1), c.penalty, 8)
			if !slices.Equal(res.Tokens, want) || math.Abs(res.AvgLogProb-wantSum/float64(len(want)+1)) > 1e-9 {
				t.Errorf("seed %d %+v: got %v (avg %v), reference %v (avg %v)", seed, c, res.Tokens, res.AvgLogProb, want, wantSum/float64(len(want)+1))
			}
			// The per-token log-probabilities follow the hypothesis through
			// the reorders: they add up to its score.
			var sum float64
			for _, lp := range res.LogProbs {
				sum += lp
			}
			if n := len(res.LogProbs); n < len(res.Tokens) || n > len(res.Tokens)+1 || math.Abs(sum-wantSum) > 1e-9 {
				t.Errorf("seed %d %+v: %d log-probabilities for %d tokens, sum %v, want %v", seed, c, n, len(res.Tokens), sum, wantSum)
			}
		}
	}
}

// TestBeamReorder checks that Reorder is skipped when the beams keep their
// places and used otherwise (the fake's logits would be wrong if it were not).
func TestBeamReorder(t *testing.T) {
	d := &fakeDecoder{m: randomModel(7, 4, negInf)}
	if _, err := Decode(context.Background(), d, fakeVocab{}, beamOpts(3, 0, nil, 8)); err != nil {
		t.Fatal(err)
	}
	if d.reorder == 0 || d.reorder > d.steps+1 {
		t.Errorf("%d reorders over %d steps", d.reorder, d.steps)
	}
}
