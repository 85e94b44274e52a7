package vad

// OpenSpeech is the speech segment a stream is inside of before the VAD
// has closed it, in the stream's samples: what a live transcriber reads
// to show text while someone is still speaking.
type OpenSpeech struct {
	// Start is where the speech began, before padding (the segment the
	// VAD closes later starts up to Options.SpeechPad earlier).
	Start int64
	// Pause is where a pause inside it began (the speech may end there),
	// 0 while the speech goes on.
	Pause int64
	// Scored is the end of the audio scored so far.
	Scored int64
}

// Open reports the segment in progress: ok is false outside speech. The
// segment that Push emits for it later ends at Pause plus the padding
// unless speech resumes.
func (s *Segmenter) Open() (o OpenSpeech, ok bool) {
	if !s.triggered || !s.haveCur {
		return OpenSpeech{Scored: s.window * s.i}, false
	}
	return OpenSpeech{Start: s.curStart, Pause: s.tempEnd, Scored: s.window * s.i}, true
}

// Pad returns the padding added to each side of a segment, in samples.
func (s *Segmenter) Pad() int64 { return int64(s.pad) }

// Open reports the speech the processor is inside of (see
// Segmenter.Open), in the positions of the segments it emits.
func (p *Processor) Open() (OpenSpeech, bool) { return p.seg.Open() }

// Pad returns the padding added to each side of a segment, in samples.
func (p *Processor) Pad() int64 { return p.seg.Pad() }

// Samples returns a copy of the stream's samples [from, to), and false
// when the processor no longer (or not yet) holds them all. It holds the
// audio of the segment in progress from its padded start on.
func (p *Processor) Samples(from, to int64) ([]float32, bool) {
	lo, hi := from-p.histStart, to-p.histStart
	if lo < 0 || hi > int64(len(p.hist)) || lo > hi {
		return nil, false
	}
	return append([]float32(nil), p.hist[lo:hi]...), true
}
