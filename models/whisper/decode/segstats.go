package decode

import "math"

// segmentStats returns the average log-probability and the no-speech
// probability of the segment of n tokens at off in res.Tokens, so that two
// segments of one window are told apart (OpenAI gives each the window's):
//
//   - the average is over the segment's tokens, and for the window's last
//     segment the <|endoftext|> after it too, as the window's AvgLogProb
//     counts it (a window of one segment keeps its AvgLogProb);
//   - the no-speech probability of the window's first segment is the
//     window's (<|nospeech|> after <|startoftranscript|>, which Whisper was
//     trained on); a later segment's is <|nospeech|>'s probability at the
//     position of its opening timestamp, where the segment's speech is
//     predicted to begin.
//
// Tokens without statistics (a Continue prefix) are left out; a result
// without them (a decoder that kept none) gives the window's values.
func segmentStats(res *Result, off, n int, last bool) (avg, noSpeech float64) {
	avg, noSpeech = res.AvgLogProb, res.NoSpeechProb
	if off+n > len(res.LogProbs) || len(res.NoSpeechProbs) != len(res.LogProbs) {
		return avg, noSpeech
	}
	lps := res.LogProbs[off : off+n]
	var sum float64
	count := 0
	if last && off+n == len(res.Tokens) { // the text ends with it
		if len(res.LogProbs) > len(res.Tokens) {
			lps = res.LogProbs[off : off+n+1] // the <|endoftext|> sampled after it
		} else {
			count++ // the sample length ran out: OpenAI still divides by tokens + 1
		}
	}
	for _, lp := range lps {
		if !math.IsNaN(lp) {
			sum += lp
			count++
		}
	}
	if count > 0 {
		avg = sum / float64(count)
	}
	if off > 0 && !math.IsNaN(res.NoSpeechProbs[off]) {
		noSpeech = res.NoSpeechProbs[off]
	}
	return avg, noSpeech
}
