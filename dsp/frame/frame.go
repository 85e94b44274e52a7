// Package frame turns a stream of PCM chunks of any size into fixed-size
// frames (for example the 512-sample frames Silero VAD takes at 16 kHz),
// carrying the remainder from one chunk to the next. Frames may overlap
// (hop < size). Flush pads the last partial frame with zeros, as the VAD
// protocol does at the end of a stream. In steady state nothing is
// allocated.
package frame

import (
	"errors"
	"fmt"
)

// ErrSize: a frame size or hop is not positive, or the hop exceeds the
// size.
var ErrSize = errors.New("frame: invalid frame size or hop")

// Emit receives one frame and the stream offset (in samples) of its first
// sample. The frame is only valid during the call and must not be
// modified or retained; copy it to keep it. A non-nil error stops
// Push/Flush and is returned from them.
type Emit func(frame []float32, offset int64) error

// Framer cuts a stream into frames of Size samples starting every Hop
// samples. A Framer is not safe for concurrent use.
type Framer struct {
	size, hop int
	buf       []float32 // the frame being assembled; buf[:n] is filled
	n         int
	fresh     int   // samples in buf[:n] that no emitted frame has covered
	next      int64 // stream offset of the frame being assembled
}

// New returns a Framer for non-overlapping frames of size samples.
func New(size int) (*Framer, error) { return NewHop(size, size) }

// NewHop returns a Framer for frames of size samples, one every hop
// samples (1 ≤ hop ≤ size); hop < size makes consecutive frames share
// size−hop samples.
func NewHop(size, hop int) (*Framer, error) {
	if size < 1 || hop < 1 || hop > size {
		return nil, fmt.Errorf("%w: size %d, hop %d", ErrSize, size, hop)
	}
	return &Framer{size: size, hop: hop, buf: make([]float32, size)}, nil
}

// Size returns the frame length in samples.
func (f *Framer) Size() int { return f.size }

// Hop returns the distance between frame starts in samples.
func (f *Framer) Hop() int { return f.hop }

// Pending returns the number of samples received but not yet part of any
// emitted frame (what Flush would pad and emit).
func (f *Framer) Pending() int { return f.fresh }

// Push feeds samples and calls emit for every frame they complete.
func (f *Framer) Push(samples []float32, emit Emit) error {
	for len(samples) > 0 {
		if f.n == 0 && f.hop == f.size && len(samples) >= f.size {
			// Whole frames straight from the caller's chunk: no copy.
			if err := emit(samples[:f.size], f.next); err != nil {
				return err
			}
			f.next += int64(f.size)
			samples = samples[f.size:]
			continue
		}
		c := copy(f.buf[f.n:], samples)
		f.n += c
		f.fresh += c
		samples = samples[c:]
		if f.n < f.size {
			break
		}
		if err := f.emitBuffered(emit); err != nil {
			return err
		}
	}
	return nil
}

// emitBuffered emits the full buffer and keeps its overlap for the next
// frame.
func (f *Framer) emitBuffered(emit Emit) error {
	if err := emit(f.buf, f.next); err != nil {
		// Keep the frame so a retry after the error sees the same state.
		return err
	}
	keep := f.size - f.hop
	copy(f.buf, f.buf[f.hop:])
	f.n = keep
	f.fresh = 0
	f.next += int64(f.hop)
	return nil
}

// Flush emits the samples not yet covered by any frame as one last frame,
// zero-padded to Size, and returns how many of its samples are real (0 if
// there was nothing to flush, in which case emit is not called). The Framer
// is then empty and ready for a new stream at offset 0.
func (f *Framer) Flush(emit Emit) (int, error) {
	if f.fresh == 0 {
		f.Reset()
		return 0, nil
	}
	filled := f.n
	clear(f.buf[f.n:])
	if err := emit(f.buf, f.next); err != nil {
		return 0, err
	}
	f.Reset()
	return filled, nil
}

// Reset drops any buffered samples and restarts offsets at 0.
func (f *Framer) Reset() {
	f.n, f.fresh, f.next = 0, 0, 0
	clear(f.buf)
}
