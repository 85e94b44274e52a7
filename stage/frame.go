package stage

import "time"

// Frame is the unit that moves between stages: a payload plus the timing that
// makes latency measurable.
//
// Frames are passed by value through channels, so a Frame must stay small:
// large data (PCM, tensors) belongs in the Payload as a slice or pointer, and
// is shared, not copied, when a frame fans out. A stage that receives a
// payload owns it until it sends it on; after that it must not modify it.
type Frame[T any] struct {
	// Offset is the position in the media stream, in samples at Rate, of the
	// first sample this frame refers to. Sources without media time (text,
	// items of a slice) count frames instead.
	Offset int64
	// Rate is the sample rate of Offset in Hz; 0 when the frame has no media
	// time.
	Rate int
	// Entered is the wall time at which the input this frame derives from
	// entered the pipeline. Sources stamp it; stages carry it forward. A frame
	// built from several inputs carries the earliest.
	Entered time.Time
	// Payload is the data.
	Payload T
}

// Media returns the media time of the frame's Offset, or 0 when the frame has
// no sample rate.
func (f Frame[T]) Media() time.Duration {
	if f.Rate <= 0 {
		return 0
	}
	sec := f.Offset / int64(f.Rate)
	rem := f.Offset % int64(f.Rate)
	return time.Duration(sec)*time.Second + time.Duration(rem)*time.Second/time.Duration(f.Rate)
}

// Age returns how long ago the frame entered the pipeline, as of now, or 0
// when it carries no entry time.
func (f Frame[T]) Age(now time.Time) time.Duration {
	if f.Entered.IsZero() {
		return 0
	}
	return now.Sub(f.Entered)
}

// Derive returns a frame with f's timing and a new payload: what a stage
// emits for an output that stands for the same stretch of media.
func Derive[Out, In any](f Frame[In], payload Out) Frame[Out] {
	return Frame[Out]{Offset: f.Offset, Rate: f.Rate, Entered: f.Entered, Payload: payload}
}
