package listen

import "sync"

// history keeps the most recent samples of a run's input, so that the
// grouper can put back the real audio between two VAD segments it joins.
// Whisper reads a stretch of digital silence inside an utterance as a hard
// break: jfk.wav with its two 0.2-s pauses zeroed lost its commas and
// final period under Whisper base, and was punctuated again with the
// pauses as recorded. The input's source writes, the grouper reads, on
// different goroutines.
type history struct {
	mu  sync.Mutex
	buf []float32 // a ring of len(buf) samples
	end int64     // stream position just after the newest sample
}

// historySamples is how much input a history holds: a whole window of
// grouped speech behind the VAD, which runs a little behind the input,
// with room to spare.
const historySamples = 2 * maxWindow

func newHistory(n int) *history { return &history{buf: make([]float32, n)} }

// add appends the next samples of the stream.
func (h *history) add(x []float32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(x) > len(h.buf) {
		h.end += int64(len(x) - len(h.buf))
		x = x[len(x)-len(h.buf):]
	}
	for len(x) > 0 {
		i := int(h.end % int64(len(h.buf)))
		n := copy(h.buf[i:], x)
		x = x[n:]
		h.end += int64(n)
	}
}

// read fills dst with the stream's samples from position from on and
// reports whether it held them all; when it did not, dst is left as it
// was.
func (h *history) read(dst []float32, from int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	to := from + int64(len(dst))
	if from < 0 || to > h.end || h.end-from > int64(len(h.buf)) {
		return false
	}
	for len(dst) > 0 {
		i := int(from % int64(len(h.buf)))
		n := copy(dst, h.buf[i:])
		dst = dst[n:]
		from += int64(n)
	}
	return true
}
