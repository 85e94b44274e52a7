package listen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/audio/device"
	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/stage"
)

// Errors of inputs.
var (
	// ErrEmptyAudio: the input holds no samples.
	ErrEmptyAudio = errors.New("empty audio")
	// ErrInputUsed: an Input was passed to a second run; each is read once.
	ErrInputUsed = errors.New("listen: input already used by a run")
	// ErrStreamClosed: a Stream was written to after Close, or after the
	// run reading it ended.
	ErrStreamClosed = errors.New("listen: stream closed")
)

// readSamples is how many samples an input reads per frame (256 ms at
// 16 kHz): small enough that segments come out promptly.
const readSamples = 4096

// An Input is audio for one run of a Transcriber or Detector: a file
// ([File]), headerless PCM ([Raw]), samples in memory ([PCM]), a live
// stream the caller feeds ([NewStream]) or a microphone ([Microphone]).
// Each carries its sample rate, so audio at a rate other than the model's
// is resampled rather than misread. An Input is read by one run only.
type Input interface {
	// open starts reading: frames at one of the rates accepted (the first
	// of them when the input's own rate is none of them, resampling).
	open(ctx context.Context, accept []int, log *slog.Logger) (*source, error)
}

// reader is the common body of inputs: next returns the following samples
// at rate (io.EOF with the last ones, or alone), rate is fixed for the
// input's life.
type reader struct {
	rate     int
	channels int  // mixed down to mono by package audio
	live     bool // speech is wanted as soon as it ends (no grouping)
	next     func(ctx context.Context, buf []float32) (int, error)
	start    func() (func(), error) // opens a device; nil for none
	used     atomic.Bool
}

// source is an opened input as a pipeline source.
type source struct {
	src  *stage.Source[[]float32]
	rate int  // of the frames src delivers
	live bool // see reader.live
	// in counts the input's own samples read (at inRate), for the audio
	// seconds of the run; out those delivered at rate.
	in, out atomic.Int64
	inRate  int
	// cut is the truncation the input ended with (an error wrapping
	// audio.ErrTruncated), nil if it ended whole; read it after the run.
	cut   error
	close func()
	// tap, if set before the run, sees every block delivered, in order.
	tap func([]float32)
}

// seconds returns the input's audio read so far, in seconds.
func (s *source) seconds() float64 { return float64(s.in.Load()) / float64(s.inRate) }

func (r *reader) open(_ context.Context, accept []int, log *slog.Logger) (*source, error) {
	if !r.used.CompareAndSwap(false, true) {
		return nil, ErrInputUsed
	}
	closeDev := func() {}
	if r.start != nil {
		c, err := r.start()
		if err != nil {
			return nil, err
		}
		closeDev = c
	}
	s := &source{rate: r.rate, inRate: r.rate, live: r.live, close: closeDev}
	if r.channels > 1 {
		log.Info("mixing down to mono", "channels", r.channels)
	}
	var rs *resample.Resampler
	if !slices.Contains(accept, r.rate) {
		var err error
		s.rate = accept[0]
		if rs, err = resample.New(r.rate, s.rate); err != nil {
			closeDev()
			return nil, fmt.Errorf("listen: resampling %d Hz to %d Hz: %w", r.rate, s.rate, err)
		}
		log.Info("resampling", "from", r.rate, "to", s.rate)
	}
	var read int64
	s.src = stage.FromSamples("input", s.rate, func(ctx context.Context) ([]float32, error) {
		buf := make([]float32, readSamples) // the pipeline keeps each buffer
		n, err := r.next(ctx, buf)
		read += int64(n)
		s.in.Add(int64(n))
		if errors.Is(err, audio.ErrTruncated) {
			// Everything before the cut is used; the run reports the cut.
			s.cut, err = err, io.EOF
		}
		if err == io.EOF && read == 0 {
			if s.cut != nil {
				return nil, s.cut
			}
			return nil, ErrEmptyAudio
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		out := buf[:n]
		if rs != nil {
			out = rs.Process(make([]float32, 0, n*s.rate/r.rate+1), buf[:n])
			if err == io.EOF {
				out = rs.Flush(out)
			}
		}
		s.out.Add(int64(len(out)))
		if s.tap != nil {
			s.tap(out)
		}
		return out, err
	})
	return s, nil
}

// File returns the audio file r holds as an Input. Its header is read and
// checked now, so a bad or empty file fails before any work is done. The
// format is told from the first bytes, not from a name (audio.Open): WAV
// (PCM or float), FLAC, MP3 or Ogg/Vorbis, any channel count (mixed down),
// rates 1–384 kHz. A format recognised but not decoded (Ogg/Opus,
// AAC/MP4, ...) fails with an error wrapping audio.ErrUnsupportedCodec
// that names it, unknown bytes with audio.ErrUnknownFormat. The reader
// may be a pipe, and a file cut short is used as far as it goes (see
// Result.Truncated).
func File(r io.Reader) (Input, error) {
	wr, err := audio.Open(r)
	if err != nil {
		return nil, err
	}
	if wr.Frames() == 0 {
		return nil, fmt.Errorf("%w (the file holds no samples)", ErrEmptyAudio)
	}
	return fromReader(wr), nil
}

// Raw returns headerless PCM in format f (for example audio.S16Mono(16000))
// read from r as an Input.
func Raw(r io.Reader, f audio.Format) (Input, error) {
	rr, err := audio.NewRawReader(r, f)
	if err != nil {
		return nil, err
	}
	return fromReader(rr), nil
}

func fromReader(r *audio.Reader) *reader {
	return &reader{rate: r.SampleRate(), channels: r.Format().Channels, next: func(_ context.Context, buf []float32) (int, error) { return r.Read(buf) }}
}

// PCM returns mono samples held in memory, at the clip's rate, as an
// Input. The samples are copied as they are read: the caller keeps c.
func PCM(c audio.Clip) (Input, error) {
	if c.SampleRate < audio.MinSampleRate || c.SampleRate > audio.MaxSampleRate {
		return nil, fmt.Errorf("listen: %w: %d Hz (want %d..%d)", audio.ErrSampleRate, c.SampleRate, audio.MinSampleRate, audio.MaxSampleRate)
	}
	if len(c.Samples) == 0 {
		return nil, ErrEmptyAudio
	}
	rest := c.Samples
	return &reader{rate: c.SampleRate, next: func(_ context.Context, buf []float32) (int, error) {
		n := copy(buf, rest)
		rest = rest[n:]
		if len(rest) == 0 {
			return n, io.EOF
		}
		return n, nil
	}}, nil
}

// Microphone returns the capture device named name ("" for the system's
// default; an index, a name or part of one) as a live Input: it is opened
// when the run starts and read until the run's context ends, and each
// utterance is transcribed as soon as the VAD closes it. Capture needs a
// build with -tags portaudio; without it the run fails with an error
// wrapping device.ErrNoAudio.
func Microphone(name string) Input {
	var c *device.Capture
	r := &reader{rate: micRate, live: true}
	r.start = func() (func(), error) {
		var err error
		if c, err = device.OpenCapture(device.Config{Device: name, SampleRate: micRate}); err != nil {
			return nil, fmt.Errorf("listen: microphone: %w", err)
		}
		return func() { c.Close() }, nil
	}
	r.next = func(ctx context.Context, buf []float32) (int, error) {
		return c.Read(ctx, buf[:micRate/10]) // 100 ms: the device's pace
	}
	return r
}

// micRate is the rate the microphone is captured at: the models' own, so
// that the device layer's resampler is the only one.
const micRate = 16000

// Stream is a live Input that the caller feeds: PCM arriving over a
// network connection, say. Write hands it samples at the rate given to
// NewStream, Close ends it; the run transcribes each utterance as soon as
// the VAD closes it. Write and Close may be called from any goroutine, at
// the same time as the run reads.
type Stream struct {
	*reader
	ch        chan []float32
	closed    chan struct{} // closed by Close
	ended     chan struct{} // closed when the run stops reading
	closeOnce sync.Once
	endOnce   sync.Once
	pending   []float32 // the rest of a written block too big for one read
}

// NewStream returns an open Stream of mono samples at rate Hz.
func NewStream(rate int) (*Stream, error) {
	if rate < audio.MinSampleRate || rate > audio.MaxSampleRate {
		return nil, fmt.Errorf("listen: %w: %d Hz (want %d..%d)", audio.ErrSampleRate, rate, audio.MinSampleRate, audio.MaxSampleRate)
	}
	s := &Stream{ch: make(chan []float32, 4), closed: make(chan struct{}), ended: make(chan struct{})}
	s.reader = &reader{rate: rate, live: true, next: s.read}
	s.reader.start = func() (func(), error) {
		return func() { s.endOnce.Do(func() { close(s.ended) }) }, nil
	}
	return s, nil
}

// Rate returns the stream's sample rate.
func (s *Stream) Rate() int { return s.rate }

// Write queues a copy of samples for the run, blocking while the run is
// busy (at most a few blocks wait). It returns ctx's error if ctx ends
// first, and ErrStreamClosed after Close or once the run has stopped.
func (s *Stream) Write(ctx context.Context, samples []float32) error {
	select {
	case <-s.closed:
		return ErrStreamClosed
	case <-s.ended:
		return ErrStreamClosed
	default:
	}
	if len(samples) == 0 {
		return nil
	}
	b := slices.Clone(samples)
	select {
	case s.ch <- b:
		return nil
	case <-s.closed:
		return ErrStreamClosed
	case <-s.ended:
		return ErrStreamClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the stream: the run transcribes what was written and
// returns. It is safe to call more than once.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// read is the stream's reader.next: the next written samples, io.EOF once
// it is closed and drained.
func (s *Stream) read(ctx context.Context, buf []float32) (int, error) {
	if len(s.pending) == 0 {
		select {
		case b := <-s.ch:
			s.pending = b
		case <-s.closed:
			// Blocks written before Close are still taken.
			select {
			case b := <-s.ch:
				s.pending = b
			default:
				return 0, io.EOF
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	n := copy(buf, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}
