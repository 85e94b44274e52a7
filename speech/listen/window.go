package listen

import (
	"strings"
	"sync"
	"time"

	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// A live reading re-encodes and re-decodes its utterance from where the
// reading starts (its origin), so on long continuous speech every reading
// would cost more than the one before: an 18-s VAD utterance of
// ../shared/golden/audio/silero_test.wav took 0.3–1 s a reading on the
// 2-core EPYC, and its Finals came that late. As whisper_streaming and
// speaches do, once the reading is long the origin moves to a boundary
// inside the committed text, whose tokens before it leave the decoder
// prefix for the prompt (they are final: committed text is never taken
// back), so that a reading covers at most about cutAtWord of audio plus
// what was said since the last committed segment.
const (
	// cutAtPause: at a Final at a pause, a reading that covers at least
	// this much audio moves its origin to the Final at a pause before
	// (the audio read ahead of it): the cut lies in real silence, and the
	// next piece is read as the continuation of the one just final, with
	// its audio. Cut at the pause itself, tiny lost the next piece's
	// first words ("If at all." on silero_test.wav).
	cutAtPause = 8 * time.Second
	// cutAtWord: a partial reading longer than this moves its origin to
	// the end of the last committed segment (Whisper's closing
	// timestamp), else between two committed words (timed by aligning
	// the reading), for speech without pauses of Options.FinalPause.
	cutAtWord = 12 * time.Second
)

// windowing is when a live run moves its readings' origin (cutAtPause,
// cutAtWord in samples); tests shorten them to cut short clips.
type windowing struct {
	atPause, atWord int64
}

// defaultWindowing returns cutAtPause and cutAtWord in samples.
func defaultWindowing() windowing {
	return windowing{atPause: int64(cutAtPause.Seconds() * SampleRate), atWord: int64(cutAtWord.Seconds() * SampleRate)}
}

// tsSamples is the audio one timestamp step stands for (20 ms).
const tsSamples = 2 * decode.HopLength

// lastSegmentEnd returns the length of the longest prefix of ids that
// ends with a segment's closing timestamp (a timestamp right after
// text), and that timestamp's step; 0, 0 when there is none. Token ids
// at or after tb are timestamps, those before eot text.
func lastSegmentEnd(ids []int32, tb, eot int32) (int, int32) {
	for i := len(ids) - 1; i >= 1; i-- {
		if ids[i] >= tb && ids[i-1] < eot {
			return i + 1, ids[i] - tb
		}
	}
	return 0, 0
}

// shiftTimes returns ids with every timestamp (tb on) moved back by
// steps, no earlier than tb: the tokens after a moved origin.
func shiftTimes(ids []int32, tb, steps int32) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id >= tb {
			id = max(tb, id-steps)
		}
		out[i] = id
	}
	return out
}

// tokenSegments splits ids, read from audio that starts at origin
// (seconds), into segments at their closing timestamps: the committed
// text before a moved origin, as the Final will hand it over. Tokens
// after the last closing timestamp make a last segment that ends at end
// (the cut: seconds).
func tokenSegments(ids []int32, origin, end float64, tok *tokenizer.Tokenizer, lang string) []Segment {
	sp := tok.Specials()
	var segs []Segment
	at := func(id int32) float64 { return origin + float64(id-sp.TimestampBegin)*0.02 }
	j, start := 0, origin
	flush := func(k int, end float64) {
		var text []int32
		for _, id := range ids[j:k] {
			if id < sp.EOT {
				text = append(text, id)
			}
		}
		s, _ := tok.Decode(text)
		segs = append(segs, Segment{Start: start, End: max(start, end), Text: s, Tokens: ids[j:k:k],
			Seek: int(origin * SampleRate / decode.HopLength), Language: lang})
		j = k
	}
	text := false
	for k, id := range ids {
		switch {
		case id >= sp.TimestampBegin && text:
			flush(k+1, at(id))
			text = false
		case id >= sp.TimestampBegin:
			if k == j {
				start = at(id)
			}
		case id < sp.EOT:
			text = true
		}
	}
	if j < len(ids) {
		flush(len(ids), end)
	}
	return segs
}

// minWordsAfter is how many committed words a cut between words leaves
// after it: the alignment places the last words of a text that stops
// mid-speech least well (it stretches the last one to the audio's end).
const minWordsAfter = 3

// minWordGap is the least gap between two aligned words that a cut may
// fall in (100 ms): with none, cut halfway between "your" and
// "country" on jfk, tiny read the rest as "country can do" and stopped.
const minWordGap = 0.1

// wordCut returns where to cut committed tokens ids between two words,
// given their words as aligned in the reading (seconds from its start):
// after the last word followed by a gap of minWordGap and at least
// minWordsAfter words, halfway into the gap, as n tokens and a timestamp
// step; false when there is no such word or the words do not spell the
// tokens' text.
func wordCut(ids []int32, words []Word, tok *tokenizer.Tokenizer) (int, int32, bool) {
	k := len(words) - 1 - minWordsAfter
	for k >= 0 && words[k+1].Start-words[k].End < minWordGap {
		k--
	}
	if k < 0 {
		return 0, 0, false
	}
	var want strings.Builder
	for _, w := range words[:k+1] {
		want.WriteString(w.Text)
	}
	steps := int32((words[k].End+words[k+1].Start)/2/0.02 + 0.5)
	if steps <= 0 {
		return 0, 0, false
	}
	eot := tok.Specials().EOT
	var text []int32
	for n, id := range ids {
		if id >= eot {
			continue
		}
		text = append(text, id)
		s, err := tok.Decode(text)
		if err != nil || len(s) > want.Len() {
			return 0, 0, false
		}
		if len(s) == want.Len() {
			if s != want.String() {
				return 0, 0, false
			}
			return n + 1, steps, true
		}
	}
	return 0, 0, false
}

// origins is where each open VAD utterance's readings start (by group),
// kept by the decoder and read by the VAD stage, which then copies only
// the audio from there on.
type origins struct {
	mu sync.Mutex
	at map[int]int64
}

// get returns group's origin, 0 when it never moved.
func (o *origins) get(group int) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.at[group]
}

// set records group's origin; a negative one forgets the group.
func (o *origins) set(group int, at int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at < 0 {
		delete(o.at, group)
		return
	}
	if o.at == nil {
		o.at = map[int]int64{}
	}
	o.at[group] = at
}
