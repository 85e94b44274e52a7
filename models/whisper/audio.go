package whisper

import (
	"context"
	"errors"
	"fmt"

	"github.com/tensorforge/forge/dsp/mel"
	"github.com/tensorforge/forge/models/whisper/decode"
)

// ErrEmptyAudio is returned for a recording without a single mel frame
// (less than 10 ms at 16 kHz).
var ErrEmptyAudio = errors.New("whisper: no audio (need at least 160 samples at 16 kHz)")

// Audio is a recording's log-mel spectrogram, ready to be encoded window
// by window; it implements decode.Audio. It is not safe for concurrent use.
//
// The spectrogram is that of the samples followed by 30 s of silence, as
// OpenAI's transcribe computes it (one global maximum for the dynamic-range
// floor). A window that runs past the end of the recording reads that
// silence, as whisper.cpp and transformers.js feed their encoders (OpenAI's
// transcribe pads the slice with zeros instead); for a recording of at most
// 30 s the first window is therefore exactly the transformers.js features.
type Audio struct {
	m      *Model
	mel    []float32 // [nMels, total] band-major
	frames int       // frames of actual audio
	total  int       // frames including the silence
	win    *Window   // the last window Encode returned
	buf    []float32
	first  *Window // a window encoded ahead of time by Prepare
}

var _ decode.Audio = (*Audio)(nil)

// NewAudio computes the log-mel spectrogram of 16 kHz mono samples.
func (m *Model) NewAudio(samples []float32) (*Audio, error) {
	frames := mel.FramesFor(len(samples))
	if frames == 0 {
		return nil, ErrEmptyAudio
	}
	total := frames + m.cfg.Frames()
	m.melMu.Lock()
	spec, err := m.mel.Compute(nil, samples, total)
	m.melMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	return &Audio{m: m, mel: spec, frames: frames, total: total}, nil
}

// Frames implements decode.Audio: the number of mel frames of audio (100
// per second), without the padding.
func (a *Audio) Frames() int { return a.frames }

// Features returns the log-mel features of the window starting at frame
// seek ([nMels, 3000], band-major), reusing dst's storage.
func (a *Audio) Features(dst []float32, seek int) ([]float32, error) {
	n, W := a.m.cfg.NMels, a.m.cfg.Frames()
	if seek < 0 || seek > a.frames {
		return dst, fmt.Errorf("whisper: window at frame %d outside the recording's %d frames", seek, a.frames)
	}
	if cap(dst) < n*W {
		dst = make([]float32, n*W)
	}
	dst = dst[:n*W]
	for b := range n {
		copy(dst[b*W:(b+1)*W], a.mel[b*a.total+seek:])
	}
	return dst, nil
}

// Prepare encodes the first window now, so that the first Encode(0, …)
// returns at once: the listen pipeline encodes in one stage and decodes in
// the next.
func (a *Audio) Prepare(ctx context.Context) error {
	if a.first != nil {
		return nil
	}
	w, err := a.encode(ctx, 0)
	if err != nil {
		return err
	}
	a.first = w
	return nil
}

// Encode implements decode.Audio: it encodes the 30-second window that
// starts at frame seek (frames is how many of them the caller considers
// audio; the rest of the window is read from the padded spectrogram). The
// window returned before is closed.
func (a *Audio) Encode(ctx context.Context, seek, frames int) (decode.Decoder, error) {
	if frames < 0 || frames > a.m.cfg.Frames() {
		return nil, fmt.Errorf("whisper: window of %d frames (max %d)", frames, a.m.cfg.Frames())
	}
	if a.win != nil {
		a.win.Close()
		a.win = nil
	}
	var w *Window
	if seek == 0 && a.first != nil {
		w, a.first = a.first, nil
	} else {
		var err error
		if w, err = a.encode(ctx, seek); err != nil {
			return nil, err
		}
	}
	a.win = w
	return w, nil
}

func (a *Audio) encode(ctx context.Context, seek int) (*Window, error) {
	f, err := a.Features(a.buf, seek)
	if err != nil {
		return nil, err
	}
	a.buf = f
	return a.m.Encode(ctx, f)
}

// Close releases the windows the audio holds.
func (a *Audio) Close() error {
	for _, w := range []*Window{a.win, a.first} {
		if w != nil {
			w.Close()
		}
	}
	a.win, a.first = nil, nil
	return nil
}
