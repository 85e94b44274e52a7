package decode

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// The fake vocabulary: 10 text tokens, then Whisper's specials in Whisper's
// order, then the 1501 timestamps.
const (
	tSpace = 0 // " "
	// 1..9 are the words " w1" … " w9"
	tEOT          = 10
	tSOT          = 11
	tEN           = 12
	tDE           = 13
	tFR           = 14
	tTranslate    = 15
	tTranscribe   = 16
	tStartOfLM    = 17
	tStartOfPrev  = 18
	tNoSpeech     = 19
	tNoTimestamps = 20
	tTS           = 21 // <|0.00|>
	fakeSize      = tTS + tokenizer.Timestamps
)

func ts(seconds float64) int32 { return tTS + int32(math.Round(seconds/0.02)) }

type fakeVocab struct{}

func (fakeVocab) Specials() tokenizer.Specials {
	return tokenizer.Specials{
		EOT: tEOT, SOT: tSOT, Translate: tTranslate, Transcribe: tTranscribe,
		StartOfLM: tStartOfLM, StartOfPrev: tStartOfPrev, NoSpeech: tNoSpeech,
		NoTimestamps: tNoTimestamps, TimestampBegin: tTS, Space: tSpace,
		Languages: []tokenizer.Language{
			{Code: "en", Name: "english", ID: tEN},
			{Code: "de", Name: "german", ID: tDE},
			{Code: "fr", Name: "french", ID: tFR},
		},
	}
}

func (fakeVocab) Size() int { return fakeSize }

func (fakeVocab) Decode(ids []int32) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id < 0 || id >= fakeSize:
			return "", fmt.Errorf("token %d out of range", id)
		case id == tSpace:
			b.WriteString(" ")
		case id < tEOT:
			fmt.Fprintf(&b, " w%d", id)
		}
	}
	return b.String(), nil
}

// model computes the logits that follow a token sequence; fakeDecoder runs
// it with per-hypothesis state as a real decoder would hold KV caches.
type model func(seq []int32, logits []float32)

// fakeDecoder keeps each hypothesis's tokens as its "cache", so a wrong
// Reorder shows up as wrong logits.
type fakeDecoder struct {
	m       model
	seqs    [][]int32
	starts  [][]int32 // prefixes passed to Start
	steps   int
	reorder int
	failAt  int // Step number that fails; 0 never
}

func (d *fakeDecoder) Start(ctx context.Context, beams int, prefix []int32, at []int, logits [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(at) != len(logits) {
		return fmt.Errorf("fake: %d positions, %d rows", len(at), len(logits))
	}
	d.starts = append(d.starts, slices.Clone(prefix))
	d.seqs = make([][]int32, beams)
	for b := range d.seqs {
		d.seqs[b] = slices.Clone(prefix)
	}
	for i, p := range at {
		if p < 0 || p >= len(prefix) || len(logits[i]) != fakeSize {
			return fmt.Errorf("fake: bad position %d or row of %d", p, len(logits[i]))
		}
		d.m(prefix[:p+1], logits[i])
	}
	return nil
}

func (d *fakeDecoder) Step(ctx context.Context, tokens []int32, logits [][]float32) error {
	d.steps++
	if d.failAt == d.steps {
		return fmt.Errorf("fake: step %d failed", d.steps)
	}
	if len(tokens) != len(d.seqs) || len(logits) != len(d.seqs) {
		return fmt.Errorf("fake: %d tokens, %d rows for %d hypotheses", len(tokens), len(logits), len(d.seqs))
	}
	for b, tok := range tokens {
		d.seqs[b] = append(d.seqs[b], tok)
		if len(d.seqs[b]) > TextContext {
			return fmt.Errorf("fake: position %d beyond the context", len(d.seqs[b])-1)
		}
		d.m(d.seqs[b], logits[b])
	}
	return nil
}

func (d *fakeDecoder) Reorder(src []int) error {
	d.reorder++
	next := make([][]int32, len(src))
	for b, s := range src {
		next[b] = slices.Clone(d.seqs[s])
	}
	d.seqs = next
	return nil
}

// scripted returns a model that, after the prefix, wants the tokens of
// script in order (logit 10 for the wanted token, 0 for the other text and
// timestamp tokens, −5 for specials), then <|endoftext|>.
func scripted(prefixLen int, script ...int32) model {
	return func(seq []int32, logits []float32) {
		for i := range logits {
			logits[i] = 0
			if i >= tEOT && i < tTS {
				logits[i] = -5
			}
		}
		k := len(seq) - prefixLen
		want := int32(tEOT)
		if k >= 0 && k < len(script) {
			want = script[k]
		}
		logits[want] = 10
	}
}
