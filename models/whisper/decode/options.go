package decode

import (
	"context"
	"fmt"
	"math"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// TextContext is the decoder's context length (n_text_ctx) in tokens: the
// number of learned positions of every Whisper model.
const TextContext = 448

// Decoder is Whisper's text decoder bound to one encoded audio window. It
// runs a batch of hypotheses (beams, or independent samples), each with its
// own self-attention cache; all of them attend to the same window.
//
// Logit rows are buffers the caller owns and reuses: the decoder writes
// Vocabulary.Size() floats into each. An implementation that keeps its own
// buffers between calls makes a greedy decode allocation-free per step.
type Decoder interface {
	// Start drops all cached state and begins beams hypotheses that share
	// prefix. It feeds the prefix once and writes the logits predicted at
	// prefix position at[i] (the distribution of the token after it) into
	// logits[i]. Start may be called again on the same window, which is how
	// language detection and temperature fallback reuse an encoding.
	Start(ctx context.Context, beams int, prefix []int32, at []int, logits [][]float32) error
	// Step appends tokens[b] to hypothesis b and writes the logits of its
	// next token into logits[b]; len(tokens) == len(logits) == beams.
	Step(ctx context.Context, tokens []int32, logits [][]float32) error
	// Reorder makes hypothesis b continue from the state of hypothesis
	// src[b], for every b at once; sources may repeat. It is called between
	// Steps, before the tokens chosen for the new hypotheses are fed.
	Reorder(src []int) error
}

// Finisher is a Decoder that wants to know when a decode is done with it
// (the best hypothesis is chosen, or the decode failed), such as one whose
// steps wait for other windows' to run as one batch and must stop holding
// them up. Decode calls Finish before it returns; a later Start or Step
// uses the decoder again.
type Finisher interface {
	Finish()
}

// Vocabulary is what decoding needs from the tokenizer;
// *tokenizer.Tokenizer implements it.
type Vocabulary interface {
	// Specials returns the ids of Whisper's special tokens.
	Specials() tokenizer.Specials
	// Size is the number of token ids, the width of a logit row.
	Size() int
	// Decode returns the text of ids, without special or timestamp tokens.
	Decode(ids []int32) (string, error)
}

// Rules names a set of logit rules.
type Rules int

const (
	// OpenAI applies openai/whisper's filters: SuppressBlank,
	// SuppressTokens (the given list plus the task, start and no-speech
	// tokens) and ApplyTimestampRules with timestamps that never decrease
	// and text forbidden before the first timestamp.
	OpenAI Rules = iota
	// TransformersJS applies what transformers.js 3.8.1's generate does,
	// which made the goldens: SuppressBlank as begin_suppress_tokens,
	// SuppressTokens exactly as given (transformers.js passes none), its
	// WhisperTimeStampLogitsProcessor (no monotonic rule, text allowed at
	// the first position), and generation up to TextContext tokens in all.
	TransformersJS
)

// String names the rule set.
func (r Rules) String() string {
	switch r {
	case OpenAI:
		return "openai"
	case TransformersJS:
		return "transformers.js"
	}
	return fmt.Sprintf("Rules(%d)", int(r))
}

// Options control the decoding of one 30-second window; they mirror
// openai/whisper's DecodingOptions. Start from OpenAIOptions or
// TransformersJSOptions: several zero values are not OpenAI's defaults.
type Options struct {
	Task tokenizer.Task
	// Language is a code ("en") or name ("english"); "" detects it from the
	// window first.
	Language string
	// Timestamps samples timestamp tokens (segments); false puts
	// <|notimestamps|> in the prefix and samples text only.
	Timestamps bool
	Rules      Rules

	// Temperature 0 picks the most likely token (or runs beam search);
	// above 0 it samples from softmax(logits/Temperature).
	Temperature float64
	// BeamSize > 0 runs beam search with that many beams (at temperature 0
	// only); 0 decodes greedily.
	BeamSize int
	// Patience lets beam search collect round(BeamSize*Patience) finished
	// hypotheses before it stops; 0 means 1.
	Patience float64
	// BestOf > 0 draws that many samples at temperature > 0 and keeps the
	// best ranked.
	BestOf int
	// LengthPenalty ranks finished hypotheses: nil divides their summed
	// log-probability by their length; α in [0, 1] divides by
	// ((5+length)/6)^α (Google NMT).
	LengthPenalty *float64
	// Seed seeds the sampler when Temperature > 0.
	Seed uint64

	// SampleLen caps the number of sampled tokens; 0 means TextContext/2
	// (OpenAI) or up to TextContext tokens in all (TransformersJS).
	SampleLen int
	// Prompt is previous text, fed after <|startofprev|> (its last
	// TextContext/2-1 tokens).
	Prompt []int32
	// Prefix is forced after the start-of-transcript sequence.
	Prefix []int32
	// Continue takes Prefix as the transcript's own beginning rather than
	// text forced before it: the logit rules (a first timestamp, pairs,
	// order) count it as sampled, Result.Tokens starts with it and
	// AvgLogProb covers the tokens after it. A live transcriber passes the
	// words it has committed, so decoding goes on where they end.
	Continue bool

	// SuppressBlank forbids " " and <|endoftext|> as the first token.
	SuppressBlank bool
	// SuppressTokens are never sampled; under OpenAI rules a non-empty list
	// also gets the task, start-of-transcript, start-of-prev, start-of-LM
	// and no-speech tokens, as OpenAI's "-1" does.
	SuppressTokens []int32
	// MaxInitialTimestamp is the latest time in seconds the first timestamp
	// may have; 0 leaves it free.
	MaxInitialTimestamp float64
}

// OpenAIOptions returns openai/whisper's defaults: language detection,
// transcribe with timestamps, greedy, blank suppression, the non-speech
// suppress list (tokenizer.NonSpeechTokens) and a first timestamp of at most
// 1 s.
func OpenAIOptions(tok *tokenizer.Tokenizer) Options {
	return Options{
		Task:                tokenizer.Transcribe,
		Timestamps:          true,
		Rules:               OpenAI,
		SuppressBlank:       true,
		SuppressTokens:      tok.NonSpeechTokens(),
		MaxInitialTimestamp: 1,
	}
}

// TransformersJSOptions returns the settings that made the goldens:
// transformers.js 3.8.1 greedy generate with begin suppression only and
// generation_config's max_initial_timestamp_index of 1.
func TransformersJSOptions(language string, timestamps bool) Options {
	return Options{
		Task:                tokenizer.Transcribe,
		Language:            language,
		Timestamps:          timestamps,
		Rules:               TransformersJS,
		SuppressBlank:       true,
		MaxInitialTimestamp: tokenizer.TimePrecision,
	}
}

func (o *Options) validate() error {
	switch {
	case o.BeamSize < 0 || o.BestOf < 0 || o.SampleLen < 0:
		return fmt.Errorf("decode options: negative BeamSize %d, BestOf %d or SampleLen %d", o.BeamSize, o.BestOf, o.SampleLen)
	case o.BeamSize > 0 && o.BestOf > 0:
		return fmt.Errorf("decode options: BeamSize and BestOf can't be given together")
	case o.Temperature == 0 && o.BestOf > 0:
		return fmt.Errorf("decode options: BestOf needs a temperature above 0")
	case o.Temperature > 0 && o.BeamSize > 0:
		return fmt.Errorf("decode options: beam search runs at temperature 0 only")
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return fmt.Errorf("decode options: temperature %v", o.Temperature)
	case o.Patience != 0 && o.BeamSize == 0:
		return fmt.Errorf("decode options: Patience needs BeamSize")
	case o.Patience < 0:
		return fmt.Errorf("decode options: negative Patience %v", o.Patience)
	case o.LengthPenalty != nil && !(*o.LengthPenalty >= 0 && *o.LengthPenalty <= 1):
		return fmt.Errorf("decode options: length penalty %v outside [0, 1]", *o.LengthPenalty)
	case o.Rules != OpenAI && o.Rules != TransformersJS:
		return fmt.Errorf("decode options: unknown rules %v", o.Rules)
	case o.MaxInitialTimestamp < 0:
		return fmt.Errorf("decode options: negative MaxInitialTimestamp %v", o.MaxInitialTimestamp)
	}
	return nil
}

// Result is the outcome of decoding one window.
type Result struct {
	// Language is the language code used; LanguageProbs is set when it was
	// detected.
	Language      string
	LanguageProbs map[string]float64
	// Tokens are the sampled tokens, timestamps included, without the
	// prefix and without <|endoftext|>.
	Tokens []int32
	// Text is the text of Tokens with surrounding white space trimmed.
	Text string
	// AvgLogProb is the summed log-probability of the sampled tokens over
	// their count plus one (for <|endoftext|>).
	AvgLogProb float64
	// LogProbs holds each token's log-probability under the rules, in the
	// order of Tokens (NaN for a Continue prefix, which was not sampled),
	// then that of the <|endoftext|> that ended them when it was sampled
	// (not when the sample length ran out): so a transcript's segments
	// can each have their own average.
	LogProbs []float64
	// NoSpeechProbs holds, for each entry of LogProbs that follows a
	// timestamp token (where a segment opens), the probability the model
	// gave <|nospeech|> at that token's position before the rules
	// suppressed it; NaN elsewhere, where LogProbs is, or when the
	// vocabulary has no such token.
	NoSpeechProbs []float64
	// NoSpeechProb is the probability of the no-speech token at the
	// start-of-transcript position; NaN when the vocabulary has none.
	NoSpeechProb     float64
	Temperature      float64
	CompressionRatio float64
}
