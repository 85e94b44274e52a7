package vad

import (
	"fmt"
	"math"
	"time"
)

// Options are the post-processing parameters of Silero's
// get_speech_timestamps. Fields are used as given; start from
// DefaultOptions, which holds the reference library's defaults.
type Options struct {
	// Threshold: a chunk with probability ≥ Threshold is speech.
	Threshold float64
	// NegThreshold: while in speech, a chunk below NegThreshold counts as
	// silence (hysteresis). 0 means the reference default,
	// max(Threshold − 0.15, 0.01).
	NegThreshold float64
	// MinSpeech: shorter segments are dropped (before padding).
	MinSpeech time.Duration
	// MinSilence: how long the probability must stay below NegThreshold
	// before a segment ends.
	MinSilence time.Duration
	// SpeechPad: padding added on both sides of each segment (halved
	// between segments closer than twice the padding).
	SpeechPad time.Duration
	// MaxSpeech: segments longer than this are split — at the longest
	// silence longer than MinSilenceAtMaxSpeech inside them if there is one
	// (the last such silence with SplitAtLastSilence), else just before
	// MaxSpeech. 0 means no limit.
	MaxSpeech time.Duration
	// MinSilenceAtMaxSpeech: the shortest inner silence a MaxSpeech split
	// may cut at.
	MinSilenceAtMaxSpeech time.Duration
	// SplitAtLastSilence cuts an over-long segment at its last usable
	// silence instead of its longest (use_max_poss_sil_at_max_speech=False).
	SplitAtLastSilence bool
}

// DefaultOptions returns get_speech_timestamps' defaults: threshold 0.5,
// release at 0.35, 250 ms minimum speech, 100 ms minimum silence, 30 ms
// padding, no maximum length (98 ms minimum silence for splits, at the
// longest one).
func DefaultOptions() Options {
	return Options{
		Threshold:             0.5,
		MinSpeech:             250 * time.Millisecond,
		MinSilence:            100 * time.Millisecond,
		SpeechPad:             30 * time.Millisecond,
		MinSilenceAtMaxSpeech: 98 * time.Millisecond,
	}
}

// Validate reports options that cannot describe a segmentation.
func (o Options) Validate() error {
	switch {
	case !(o.Threshold > 0 && o.Threshold <= 1):
		return fmt.Errorf("%w: threshold %v is not in (0, 1]", ErrBadOptions, o.Threshold)
	case !(o.NegThreshold >= 0 && o.NegThreshold <= o.Threshold):
		return fmt.Errorf("%w: negative threshold %v is not in [0, threshold %v]", ErrBadOptions, o.NegThreshold, o.Threshold)
	case o.MinSpeech < 0 || o.MinSilence < 0 || o.SpeechPad < 0 || o.MaxSpeech < 0 || o.MinSilenceAtMaxSpeech < 0:
		return fmt.Errorf("%w: negative duration in %+v", ErrBadOptions, o)
	}
	return nil
}

// Segment is a stretch of speech in samples of the stream: [Start, End).
type Segment struct {
	Start, End int64
}

// Seconds returns the segment's bounds in seconds at rate.
func (s Segment) Seconds(rate int) (start, end float64) {
	return float64(s.Start) / float64(rate), float64(s.End) / float64(rate)
}

// Duration returns the segment's length at rate.
func (s Segment) Duration(rate int) time.Duration {
	return time.Duration(float64(s.End-s.Start) / float64(rate) * float64(time.Second))
}

// silence is a pause inside a segment where a MaxSpeech split may cut.
type silence struct{ end, dur int64 }

// Segmenter turns a stream of per-chunk speech probabilities into speech
// segments with exactly the results of Silero's get_speech_timestamps on
// the whole stream, emitting each segment as soon as nothing later can
// change it. Feed one probability per chunk with Push, then call Flush
// with the stream's length. Not safe for concurrent use.
type Segmenter struct {
	window int64 // samples per chunk
	neg    float64
	opt    Options
	// Sample counts, as floats: the reference compares integer positions
	// with sr·ms/1000.
	minSpeech, minSilence, pad, maxSpeech, minSilenceAtMax float64

	// get_speech_timestamps' loop state
	i         int64 // index of the next chunk
	triggered bool
	haveCur   bool  // current_speech has a start
	curStart  int64 // current_speech['start']
	tempEnd   int64 // 0: no silence pending
	possible  []silence

	// padding state: the last segment the loop produced, its start padded
	// already, its end waiting for the next segment's start.
	havePending bool
	pending     Segment
	// shift, when set, is how far the open segment's start moves back
	// when it is emitted: settle emitted the segment before it early, its
	// end halfway into the gap between them (emit's rule), once the open
	// segment was sure to be kept.
	haveShift bool
	shift     int64
}

// NewSegmenter returns a segmenter for probabilities of consecutive chunks
// of window samples at rate (512 at 16 kHz, 256 at 8 kHz).
func NewSegmenter(rate, window int, opt Options) (*Segmenter, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if rate <= 0 || window <= 0 {
		return nil, fmt.Errorf("%w: rate %d Hz, window %d samples", ErrBadOptions, rate, window)
	}
	s := &Segmenter{window: int64(window), opt: opt}
	samples := func(d time.Duration) float64 { return float64(rate) * float64(d) / float64(time.Second) }
	s.minSpeech = samples(opt.MinSpeech)
	s.minSilence = samples(opt.MinSilence)
	s.pad = samples(opt.SpeechPad)
	s.minSilenceAtMax = samples(opt.MinSilenceAtMaxSpeech)
	s.maxSpeech = math.Inf(1)
	if opt.MaxSpeech > 0 {
		s.maxSpeech = samples(opt.MaxSpeech) - float64(window) - 2*s.pad
	}
	s.neg = opt.NegThreshold
	if s.neg == 0 {
		s.neg = max(opt.Threshold-0.15, 0.01)
	}
	return s, nil
}

// Reset forgets everything: the next Push is chunk 0 of a new stream.
func (s *Segmenter) Reset() {
	s.i, s.triggered, s.haveCur, s.curStart, s.tempEnd = 0, false, false, 0, 0
	s.possible = s.possible[:0]
	s.havePending = false
	s.haveShift = false
}

// Window returns the chunk length in samples.
func (s *Segmenter) Window() int { return int(s.window) }

// Push takes the probability of the next chunk and appends to dst the
// segments that became final, in order. Without MaxSpeech it allocates
// nothing.
func (s *Segmenter) Push(p float32, dst []Segment) []Segment {
	prob := float64(p)
	i := s.i
	s.i++
	pos := s.window * i
	dst = s.step(prob, pos, dst)
	return s.settle(dst)
}

// step is one iteration of get_speech_timestamps' loop over the chunk
// starting at sample pos.
func (s *Segmenter) step(prob float64, pos int64, dst []Segment) []Segment {
	thr := s.opt.Threshold
	if prob >= thr && s.tempEnd != 0 {
		// Speech resumes: the pause is a place to split at if it was long.
		if dur := pos - s.tempEnd; float64(dur) > s.minSilenceAtMax && !math.IsInf(s.maxSpeech, 1) {
			s.possible = append(s.possible, silence{s.tempEnd, dur})
		}
		s.tempEnd = 0
	}
	if prob >= thr && !s.triggered {
		s.triggered, s.haveCur, s.curStart = true, true, pos
		return dst
	}
	if s.triggered && float64(pos-s.curStart) > s.maxSpeech {
		if len(s.possible) > 0 {
			cut := s.possible[len(s.possible)-1]
			if !s.opt.SplitAtLastSilence {
				for _, c := range s.possible { // the first longest, as Python's max
					if c.dur > cut.dur || c.dur == cut.dur && c.end < cut.end {
						cut = c
					}
				}
			}
			dst = s.emit(Segment{s.curStart, cut.end}, dst)
			next := cut.end + cut.dur
			if next < cut.end+pos { // always so: the silence ended before pos
				s.haveCur, s.curStart = true, next
			} else {
				s.triggered, s.haveCur = false, false
			}
			kept := s.possible[:0]
			for _, c := range s.possible {
				if c.end > next {
					kept = append(kept, c)
				}
			}
			s.possible = kept
			s.tempEnd = 0
		} else {
			dst = s.emit(Segment{s.curStart, pos}, dst)
			s.triggered, s.haveCur, s.tempEnd = false, false, 0
			s.possible = s.possible[:0]
			return dst
		}
	}
	if prob < s.neg && s.triggered {
		if s.tempEnd == 0 {
			s.tempEnd = pos
		}
		if float64(pos-s.tempEnd) < s.minSilence {
			return dst
		}
		if float64(s.tempEnd-s.curStart) > s.minSpeech {
			dst = s.emit(Segment{s.curStart, s.tempEnd}, dst)
		}
		s.triggered, s.haveCur, s.tempEnd = false, false, 0
		s.possible = s.possible[:0]
	}
	return dst
}

// emit takes a segment the loop appended (unpadded) and applies the
// padding pass: it fixes the end of the pending segment, which depends on
// this one's start, and pads this one's start, which depends on the pending
// segment's end.
func (s *Segmenter) emit(seg Segment, dst []Segment) []Segment {
	switch {
	case s.haveShift:
		seg.Start = max(0, seg.Start-s.shift)
		s.haveShift = false
	case !s.havePending:
		seg.Start = int64(max(0, float64(seg.Start)-s.pad))
	default:
		p := s.pending
		gap := seg.Start - p.End
		if float64(gap) < 2*s.pad {
			p.End += gap / 2
			seg.Start = max(0, seg.Start-gap/2)
		} else {
			// The stream reaches at least seg.Start ≥ p.End + pad, so the
			// reference's min with the stream length changes nothing.
			p.End = int64(float64(p.End) + s.pad)
			seg.Start = int64(max(0, float64(seg.Start)-s.pad))
		}
		dst = append(dst, p)
	}
	s.pending, s.havePending = seg, true
	return dst
}

// settle emits the pending segment early when no later segment can start
// close enough to change its end: the next segment starts no earlier than
// the open one (if any) and no earlier than the next chunk. When the open
// segment starts close enough to share the gap, the pending one's end is
// known as soon as the open one is sure to be kept (it ends no earlier
// than its pending silence or the stream's last chunk, and the reference
// keeps it when that is longer than MinSpeech): a live caller then gets an
// utterance when the next one is under way, not when the next one ends.
func (s *Segmenter) settle(dst []Segment) []Segment {
	if !s.havePending {
		return dst
	}
	next := s.window * s.i
	if s.haveCur {
		next = min(next, s.curStart)
		minEnd := s.tempEnd
		if minEnd == 0 {
			minEnd = s.window*(s.i-1) + 1
		}
		if gap := s.curStart - s.pending.End; float64(gap) < 2*s.pad && float64(minEnd-s.curStart) > s.minSpeech {
			p := s.pending
			p.End += gap / 2
			s.haveShift, s.shift = true, gap/2
			s.havePending = false
			return append(dst, p)
		}
	}
	end := float64(s.pending.End) + s.pad
	// The stream holds at least one sample of the last chunk: it is longer
	// than window·(i−1), so an end that fits there needs no clamping.
	if float64(next-s.pending.End) >= 2*s.pad && end <= float64(s.window*(s.i-1)) {
		s.pending.End = int64(end)
		dst = append(dst, s.pending)
		s.havePending = false
	}
	return dst
}

// Horizon returns the first sample that a segment not yet emitted can
// include: audio before it can be dropped by a streaming caller.
func (s *Segmenter) Horizon() int64 {
	if s.havePending {
		return s.pending.Start
	}
	// The next segment's raw start is the open one's or a later chunk's;
	// padding moves it back by at most the pad.
	next := s.window * s.i
	if s.haveCur {
		next = min(next, s.curStart)
	}
	return max(0, next-int64(math.Ceil(s.pad)))
}

// Flush ends the stream, whose length is total samples, and appends the
// segments still held. The segmenter is then Reset.
func (s *Segmenter) Flush(total int64, dst []Segment) []Segment {
	if s.haveCur && float64(total-s.curStart) > s.minSpeech {
		dst = s.emit(Segment{s.curStart, total}, dst)
	}
	if s.havePending {
		p := s.pending
		p.End = int64(min(float64(total), float64(p.End)+s.pad))
		dst = append(dst, p)
	}
	s.Reset()
	return dst
}

// Segments runs the post-processing over a whole stream: probs holds one
// probability per chunk of window samples and total is the stream's length
// in samples (the last chunk may be partial). It returns what Silero's
// get_speech_timestamps returns, in samples.
func Segments(probs []float32, total int64, rate, window int, opt Options) ([]Segment, error) {
	s, err := NewSegmenter(rate, window, opt)
	if err != nil {
		return nil, err
	}
	if want := (total + int64(window) - 1) / int64(window); int64(len(probs)) != want || total < 0 {
		return nil, fmt.Errorf("%w: %d probabilities for %d samples in chunks of %d (want %d)", ErrBadOptions, len(probs), total, window, want)
	}
	var out []Segment
	for _, p := range probs {
		out = s.Push(p, out)
	}
	return s.Flush(total, out), nil
}
