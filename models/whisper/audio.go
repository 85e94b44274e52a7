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
// With RealLength a window is cut after the bucket that holds its audio,
// so the encoder still sees that silence after the speech, only less of it.
type Audio struct {
	m      *Model
	mel    []float32 // [nMels, total] band-major
	frames int       // frames of actual audio
	total  int       // frames including the silence
	win    *Window   // the last window Encode returned
	buf    []float32
	first  *Window // a window at frame 0 encoded ahead of time (Prepare, TranscribeMany)
	firstF int     // the frames first encodes
	batch  *Batch  // where its windows' greedy steps run (UseBatch)
}

// UseBatch makes the greedy decoder steps of the windows a hands out run
// in b, batched with other recordings' (see Batch); nil makes them run
// alone.
func (a *Audio) UseBatch(b *Batch) {
	a.batch = b
	for _, w := range []*Window{a.win, a.first} {
		if w != nil {
			w.UseBatch(b)
		}
	}
}

var _ decode.PaddedAudio = (*Audio)(nil)

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

// Features returns the log-mel features of the 30-second window starting
// at frame seek ([nMels, 3000], band-major), reusing dst's storage.
func (a *Audio) Features(dst []float32, seek int) ([]float32, error) {
	return a.features(dst, seek, a.m.cfg.Frames())
}

// features returns the width frames starting at seek ([nMels, width]).
func (a *Audio) features(dst []float32, seek, width int) ([]float32, error) {
	n := a.m.cfg.NMels
	if seek < 0 || seek > a.frames {
		return dst, fmt.Errorf("whisper: window at frame %d outside the recording's %d frames", seek, a.frames)
	}
	if width < 0 || width > a.m.cfg.Frames() {
		return dst, fmt.Errorf("whisper: window of %d frames (max %d)", width, a.m.cfg.Frames())
	}
	if cap(dst) < n*width {
		dst = make([]float32, n*width)
	}
	dst = dst[:n*width]
	for b := range n {
		copy(dst[b*width:(b+1)*width], a.mel[b*a.total+seek:])
	}
	return dst, nil
}

// firstFrames returns the frames of audio in the window at frame 0, as
// decode.Transcribe asks for it.
func (a *Audio) firstFrames() int { return min(a.frames, a.m.cfg.Frames()) }

// Prepare encodes the first window now, so that the first Encode(0, …)
// returns at once: the listen pipeline encodes in one stage and decodes in
// the next.
func (a *Audio) Prepare(ctx context.Context) error {
	if a.first != nil {
		return nil
	}
	width := a.m.encodeFrames(a.firstFrames())
	w, err := a.encode(ctx, 0, width)
	if err != nil {
		return err
	}
	a.first, a.firstF = w, width
	return nil
}

// Encode implements decode.Audio: it encodes the window that starts at
// frame seek, of which frames hold audio (by the caller's count), padded
// with the spectrogram's silence to 30 s (FullWindow) or to the bucket of
// frames (RealLength). The window returned before is closed.
func (a *Audio) Encode(ctx context.Context, seek, frames int) (decode.Decoder, error) {
	if frames < 0 || frames > a.m.cfg.Frames() {
		return nil, fmt.Errorf("whisper: window of %d frames (max %d)", frames, a.m.cfg.Frames())
	}
	if a.win != nil {
		a.win.Close()
		a.win = nil
	}
	width := a.m.encodeFrames(frames)
	var w *Window
	if seek == 0 && a.first != nil && a.firstF != width {
		a.first.Close() // encoded for another count of frames than asked for now
		a.first = nil
	}
	if seek == 0 && a.first != nil {
		w, a.first = a.first, nil
	} else {
		var err error
		if w, err = a.encode(ctx, seek, width); err != nil {
			return nil, err
		}
	}
	w.UseBatch(a.batch)
	a.win = w
	return w, nil
}

// EncodePadded implements decode.PaddedAudio: it encodes the window as
// Encode does but padded to 30 s, or returns nil when Encode encodes that
// window so already (FullWindow, or audio that fills the last bucket).
func (a *Audio) EncodePadded(ctx context.Context, seek, frames int) (decode.Decoder, error) {
	W := a.m.cfg.Frames()
	if frames < 0 || frames > W {
		return nil, fmt.Errorf("whisper: window of %d frames (max %d)", frames, W)
	}
	if a.m.encodeFrames(frames) >= W {
		return nil, nil
	}
	if a.win != nil {
		a.win.Close()
		a.win = nil
	}
	w, err := a.encode(ctx, seek, W)
	if err != nil {
		return nil, err
	}
	w.UseBatch(a.batch)
	a.win = w
	return w, nil
}

func (a *Audio) encode(ctx context.Context, seek, width int) (*Window, error) {
	f, err := a.features(a.buf, seek, width)
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
