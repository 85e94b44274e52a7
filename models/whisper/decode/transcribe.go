package decode

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// Audio geometry shared by every Whisper model.
const (
	SampleRate      = 16000                  // samples per second
	HopLength       = 160                    // samples per mel frame
	FramesPerSecond = SampleRate / HopLength // 100 mel frames per second
	WindowFrames    = 30 * FramesPerSecond   // mel frames in one 30 s window
	InputStride     = 2                      // mel frames per encoder output (and timestamp step)
	frameSeconds    = float64(HopLength) / SampleRate
	timePrecision   = InputStride * frameSeconds // 0.02 s
)

// ErrNoAudio is returned by Transcribe for a recording without frames.
var ErrNoAudio = errors.New("no audio to transcribe")

// Audio is a recording as Whisper's encoder sees it: log-mel frames, 100 per
// second. The model package implements it over its feature extractor and
// encoder.
type Audio interface {
	// Frames is the number of mel frames of actual audio, without padding.
	Frames() int
	// Encode encodes the frames [seek, seek+frames) padded with silence
	// (frames ≤ WindowFrames), to a 30-second window as Whisper was trained
	// or, for speed, to less (see PaddedAudio), and returns the decoder
	// bound to that window.
	Encode(ctx context.Context, seek, frames int) (Decoder, error)
}

// PaddedAudio is an Audio whose Encode may encode less than a 30-second
// window (the model package's RealLength: the audio rounded up to a few
// seconds). Whisper was trained on 30-s windows only, and on a shorter one
// it sometimes loops or runs past the end of the speech; so when the
// result of such a window at the first temperature fails the fallback
// thresholds (a repetition loop, an improbable text) or has a timestamp
// more than a second past the window's audio, Transcribe decodes the
// window again, at every temperature as needed, from EncodePadded.
type PaddedAudio interface {
	Audio
	// EncodePadded encodes the window as Encode does, padded to 30 s; it
	// returns nil and no error when Encode already encoded that window
	// padded (there is nothing to retry).
	EncodePadded(ctx context.Context, seek, frames int) (Decoder, error)
}

// pastEndSlack is how far past a window's audio a timestamp may go before
// the result of a shortened window is decoded again padded: padded windows
// end the last segment up to half a second after the audio (the goldens'
// cards_004 ends at 1.55 s with <|2.00|>).
const pastEndSlack = FramesPerSecond

// TranscribeOptions control a whole transcription, as the keyword arguments
// of openai/whisper's transcribe. Start from DefaultTranscribeOptions.
type TranscribeOptions struct {
	// Options decode each window; Temperature is taken from Temperatures
	// and Prompt from the previous windows' text.
	Options
	// Temperatures are tried in order until a window's result passes the
	// thresholds; beam search runs at 0 only, BestOf above 0 only.
	Temperatures []float64
	// CompressionRatioThreshold fails a result whose text compresses better
	// than this (a repetition loop). NaN disables the check, as do
	// LogProbThreshold and NoSpeechThreshold for theirs.
	CompressionRatioThreshold float64
	// LogProbThreshold fails a result whose AvgLogProb is below it.
	LogProbThreshold float64
	// NoSpeechThreshold: a window whose NoSpeechProb is above it and whose
	// AvgLogProb is below LogProbThreshold is taken as silence and skipped.
	NoSpeechThreshold float64
	// ConditionOnPreviousText feeds each window the text so far as its
	// prompt; the prompt is reset after a window decoded above
	// temperature 0.5.
	ConditionOnPreviousText bool
	// InitialPrompt is fed to the first window (the caller encodes
	// " "+text).
	InitialPrompt []int32
	// RetryLoopsOnly decodes a shortened window (see PaddedAudio) again
	// padded only when its result loops (CompressionRatioThreshold) or
	// has text after a timestamp past its audio, not when it fails
	// LogProbThreshold alone or when only its closing timestamp lies past
	// the audio (the text ended in time; the caller clamps the end). For
	// callers that cannot wait for a 30-s encoding (a live final: 0.5–1.3 s
	// of CPU for tiny and base on 2 cores) and decode at one temperature,
	// where the log-probability check has no other use: short clips score
	// near −1 whatever the window, and on the golden clips the retries
	// this skips read the same text tokens.
	RetryLoopsOnly bool
	// OnSegment, if set, is called with each segment as soon as its window
	// is decoded, in order.
	OnSegment func(Segment)
}

// DefaultTranscribeOptions returns openai/whisper's transcribe defaults
// around the given window options: temperatures 0, 0.2, …, 1.0, compression
// ratio threshold 2.4, log-probability threshold −1, no-speech threshold
// 0.6, conditioning on previous text.
func DefaultTranscribeOptions(opts Options) TranscribeOptions {
	return TranscribeOptions{
		Options:                   opts,
		Temperatures:              []float64{0, 0.2, 0.4, 0.6, 0.8, 1},
		CompressionRatioThreshold: 2.4,
		LogProbThreshold:          -1,
		NoSpeechThreshold:         0.6,
		ConditionOnPreviousText:   true,
	}
}

// Segment is a stretch of the transcript between two timestamps.
type Segment struct {
	ID         int
	Seek       int     // mel frame where its window started
	Start, End float64 // seconds from the start of the recording
	Text       string
	Tokens     []int32 // sampled tokens, timestamps included
	// AvgLogProb and NoSpeechProb describe the segment (see
	// segmentStats), the rest the window's decoding result.
	// PaddedRetry: the window's shorter encoding failed the checks (see
	// PaddedAudio) and it was decoded again padded to 30 s.
	PaddedRetry      bool
	Temperature      float64
	AvgLogProb       float64
	CompressionRatio float64
	NoSpeechProb     float64
}

// Transcript is the outcome of Transcribe.
type Transcript struct {
	Text     string
	Segments []Segment
	Language string
	// LanguageProbs is set when the language was detected.
	LanguageProbs map[string]float64
}

// Transcribe transcribes a recording of any length as OpenAI's transcribe
// does: 30-second windows; a window's text ends at its last complete
// timestamp pair and the next window starts there (or after the whole
// window when it ended with a lone timestamp or had none); each window is
// decoded at rising temperatures until its text is neither too repetitive
// nor too improbable; windows that look silent are skipped. With
// opts.Language "" the language is detected on the first window.
func Transcribe(ctx context.Context, audio Audio, vocab Vocabulary, opts TranscribeOptions) (*Transcript, error) {
	sp := vocab.Specials()
	frames := audio.Frames()
	if frames <= 0 {
		return nil, ErrNoAudio
	}
	if len(opts.Temperatures) == 0 {
		return nil, errors.New("transcribe: no temperatures to decode at")
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	tr := &Transcript{}

	// The first window may serve language detection and decoding both.
	var first Decoder
	firstFrames := min(WindowFrames, frames)
	window := func(seek, n int) (Decoder, error) {
		if seek == 0 && n == firstFrames && first != nil {
			d := first
			first = nil
			return d, nil
		}
		d, err := audio.Encode(ctx, seek, n)
		if err != nil {
			return nil, fmt.Errorf("transcribe: encode frames [%d, %d): %w", seek, seek+n, err)
		}
		return d, nil
	}

	lang := opts.Language
	switch {
	case lang != "":
	case len(sp.Languages) == 0:
		lang = "en"
	default:
		d, err := window(0, firstFrames)
		if err != nil {
			return nil, err
		}
		det, err := detectLanguage(ctx, d, vocab.Size(), &sp)
		if err != nil {
			return nil, fmt.Errorf("transcribe: %w", err)
		}
		first = d
		lang, tr.LanguageProbs = det.Language.Code, det.Probs
	}
	if len(sp.Languages) > 0 {
		l, err := sp.Language(lang)
		if err != nil {
			return nil, fmt.Errorf("transcribe: %w", err)
		}
		lang = l.Code
	}
	tr.Language = lang
	opts.Language = lang

	allTokens := append([]int32(nil), opts.InitialPrompt...)
	promptResetSince := 0
	for seek := 0; seek < frames; {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("transcribe: %w", err)
		}
		timeOffset := float64(seek*HopLength) / SampleRate
		size := min(WindowFrames, frames-seek)
		duration := float64(size*HopLength) / SampleRate

		dec, err := window(seek, size)
		if err != nil {
			return nil, err
		}
		opts.Prompt = allTokens[promptResetSince:]
		var padded func() (Decoder, error)
		if pa, ok := audio.(PaddedAudio); ok {
			padded = func() (Decoder, error) { return pa.EncodePadded(ctx, seek, size) }
		}
		res, retried, err := decodeWithFallback(ctx, dec, vocab, &sp, &opts, rng, size, padded)
		if err != nil {
			return nil, fmt.Errorf("transcribe: window at %.2f s: %w", timeOffset, err)
		}
		if opts.Continue {
			opts.Prefix, opts.Continue = nil, false // the transcript's beginning is in the first window only
		}
		if res.NoSpeechProb > opts.NoSpeechThreshold && !(res.AvgLogProb > opts.LogProbThreshold) {
			seek += size // silence: go to the next window
			continue
		}

		segs, advance := splitSegments(res.Tokens, sp.TimestampBegin, size)
		off := 0 // of the segment's tokens in res.Tokens
		for i, s := range segs {
			avg, noSpeech := segmentStats(res, off, len(s.tokens), i == len(segs)-1)
			off += len(s.tokens)
			text, err := vocab.Decode(textTokens(s.tokens, sp.EOT))
			if err != nil {
				return nil, fmt.Errorf("transcribe: %w", err)
			}
			seg := Segment{
				ID:               len(tr.Segments),
				Seek:             seek,
				Start:            timeOffset + float64(s.start)*timePrecision,
				End:              timeOffset + float64(s.end)*timePrecision,
				Text:             text,
				Tokens:           s.tokens,
				PaddedRetry:      retried,
				Temperature:      res.Temperature,
				AvgLogProb:       avg,
				CompressionRatio: res.CompressionRatio,
				NoSpeechProb:     noSpeech,
			}
			if s.start < 0 { // no timestamp pair: the whole window
				seg.Start = timeOffset
				seg.End = timeOffset + duration
				if s.end >= 0 {
					seg.End = timeOffset + float64(s.end)*timePrecision
				}
			}
			if seg.Start == seg.End || strings.TrimSpace(seg.Text) == "" {
				seg.Text, seg.Tokens = "", nil // instantaneous or empty
			}
			tr.Segments = append(tr.Segments, seg)
			allTokens = append(allTokens, seg.Tokens...)
			if opts.OnSegment != nil {
				opts.OnSegment(seg)
			}
		}
		seek += advance
		if !opts.ConditionOnPreviousText || res.Temperature > 0.5 {
			promptResetSince = len(allTokens)
		}
	}
	text, err := vocab.Decode(allTokens[len(opts.InitialPrompt):])
	if err != nil {
		return nil, fmt.Errorf("transcribe: %w", err)
	}
	tr.Text = text
	return tr, nil
}

// decodeWithFallback decodes a window at each temperature in turn until the
// result is neither too repetitive nor too improbable, or looks like
// silence; it returns the last result. padded, if not nil, encodes the
// window padded to 30 s (nil when dec is that already): when the result at
// the first temperature fails the thresholds or runs past the window's
// frames of audio, the window is decoded again from it, from the first
// temperature on, and retried reports so.
func decodeWithFallback(ctx context.Context, dec Decoder, vocab Vocabulary, sp *tokenizer.Specials, opts *TranscribeOptions, rng *rand.Rand, frames int, padded func() (Decoder, error)) (res *Result, retried bool, err error) {
	for k := 0; k < len(opts.Temperatures); k++ {
		temp := opts.Temperatures[k]
		o := opts.Options
		o.Temperature = temp
		if temp > 0 {
			o.BeamSize, o.Patience = 0, 0
		} else {
			o.BestOf = 0
		}
		if res, err = decode(ctx, dec, vocab, sp, o, rng); err != nil {
			return nil, retried, err
		}
		if padded != nil && retryPadded(res, opts, sp, frames) {
			d, err := padded()
			if err != nil {
				return nil, retried, fmt.Errorf("padded window: %w", err)
			}
			if d != nil {
				dec, retried = d, true
				k = -1 // the ladder again, on the padded window
			}
		}
		padded = nil // only the first result decides
		if k >= 0 && !needsFallback(res, opts) {
			break
		}
	}
	return res, retried, nil
}

// pastEnd returns the index of the first timestamp among tokens that lies
// more than pastEndSlack after a window's frames of audio, or -1.
func pastEnd(tokens []int32, tb int32, frames int) int {
	for i, t := range tokens {
		if t >= tb && int(t-tb)*InputStride > frames+pastEndSlack {
			return i
		}
	}
	return -1
}

// retryPadded reports whether a shortened window's result of frames of
// audio calls for its padded encoding: it fails the fallback thresholds
// or has a timestamp past the audio; with RetryLoopsOnly, it loops or
// has text after such a timestamp.
func retryPadded(r *Result, o *TranscribeOptions, sp *tokenizer.Specials, frames int) bool {
	past := pastEnd(r.Tokens, sp.TimestampBegin, frames)
	if !o.RetryLoopsOnly {
		return needsFallback(r, o) || past >= 0
	}
	if needsFallback(r, o) && r.CompressionRatio > o.CompressionRatioThreshold {
		return true
	}
	return past >= 0 && slices.ContainsFunc(r.Tokens[past:], func(t int32) bool { return t < sp.EOT })
}

// needsFallback is OpenAI's test; comparisons with NaN thresholds are false,
// which disables them.
func needsFallback(r *Result, o *TranscribeOptions) bool {
	fallback := r.CompressionRatio > o.CompressionRatioThreshold || r.AvgLogProb < o.LogProbThreshold
	if r.NoSpeechProb > o.NoSpeechThreshold && r.AvgLogProb < o.LogProbThreshold {
		fallback = false // silence
	}
	return fallback
}

// span is a segment within a window, in timestamp steps; start < 0 marks the
// single segment of a window without timestamp pairs, whose end is its last
// timestamp (or -1 for none).
type span struct {
	start, end int
	tokens     []int32
}

// splitSegments cuts a window's sampled tokens into segments at
// consecutive timestamps and returns them with the number of mel frames to
// advance, as OpenAI's transcribe: up to the last complete segment, or the
// whole window when the output ends with a lone timestamp or has no
// consecutive timestamps.
func splitSegments(tokens []int32, tb int32, size int) ([]span, int) {
	isTS := func(i int) bool { return tokens[i] >= tb }
	n := len(tokens)
	singleEnding := n >= 2 && !isTS(n-2) && isTS(n-1)

	var cuts []int
	for i := 1; i < n; i++ {
		if isTS(i-1) && isTS(i) {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) == 0 {
		s := span{start: -1, end: -1, tokens: tokens}
		for i := n - 1; i >= 0; i-- {
			if isTS(i) {
				if tokens[i] != tb {
					s.end = int(tokens[i] - tb)
				}
				break
			}
		}
		return []span{s}, size
	}
	if singleEnding {
		cuts = append(cuts, n)
	}
	var segs []span
	last := 0
	for _, c := range cuts {
		part := tokens[last:c]
		segs = append(segs, span{
			start:  int(part[0] - tb),
			end:    int(part[len(part)-1] - tb),
			tokens: part,
		})
		last = c
	}
	if singleEnding {
		return segs, size
	}
	return segs, int(tokens[last-1]-tb) * InputStride
}

func textTokens(tokens []int32, eot int32) []int32 {
	out := make([]int32, 0, len(tokens))
	for _, t := range tokens {
		if t < eot {
			out = append(out, t)
		}
	}
	return out
}
