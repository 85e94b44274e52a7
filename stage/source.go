package stage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
)

// Source is the goroutine at the head of a pipeline: it produces frames and
// stamps each with the wall time it entered the pipeline (unless the frame
// already carries one). Build one with [FromFunc], [FromFrames],
// [FromSamples], [FromSlice], [FromSeq], [FromReader] or [FromPCM16].
type Source[T any] struct {
	name    string
	produce func(ctx context.Context, emit Emit[T]) error
}

// NewSource returns a source whose body calls emit once per frame, in order,
// and returns nil at the end of its data. It is the general form the From*
// constructors are built on; use it for a source that pushes (a capture
// callback loop) rather than being pulled. emit returns an error only when
// the pipeline is cancelled; produce should then return it.
func NewSource[T any](name string, produce func(ctx context.Context, emit Emit[T]) error) *Source[T] {
	return &Source[T]{name: name, produce: produce}
}

// Name returns the source's name.
func (s *Source[T]) Name() string { return s.name }

// Run produces frames into out until the data ends (nil), ctx is cancelled
// (ctx's error) or the source fails (its error, named by the source). It
// never closes out.
func (s *Source[T]) Run(ctx context.Context, out chan<- Frame[T], m *Metrics) (err error) {
	if m == nil {
		m = NewMetrics(s.name, KindSource)
	}
	defer guard(s.name, &err)
	e := &sourceEmitter[T]{ctx: ctx, done: ctx.Done(), out: out, m: m, last: now()}
	err = s.produce(ctx, e.emit)
	if err == nil {
		err = ctx.Err() // a source that stopped because of cancellation did not finish
	}
	return wrap(s.name, err)
}

type sourceEmitter[T any] struct {
	ctx  context.Context
	done <-chan struct{}
	out  chan<- Frame[T]
	m    *Metrics
	last tick // when the previous emit returned
}

func (e *sourceEmitter[T]) emit(f Frame[T]) error {
	t := now()
	e.m.addBusy(t - e.last)
	if f.Entered.IsZero() {
		f.Entered = wallAt(t)
	}
	e.m.markOnce(&e.m.firstIn, tickOf(f.Entered))
	select {
	case <-e.done:
		return e.ctx.Err()
	default:
	}
	e.last = t
	if !sendNow(e.out, f) {
		if !sendWait(e.done, e.out, f) {
			return e.ctx.Err()
		}
		e.last = now()
		e.m.waitOut.Add(int64(e.last - t))
	}
	e.m.framesOut.Add(1)
	e.m.markOnce(&e.m.firstOut, e.last)
	return nil
}

// FromFrames returns a source that calls next for each frame until it
// returns io.EOF. next decides the timing; a zero Entered is stamped.
func FromFrames[T any](name string, next func(ctx context.Context) (Frame[T], error)) *Source[T] {
	return NewSource(name, func(ctx context.Context, emit Emit[T]) error {
		for {
			f, err := next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := emit(f); err != nil {
				return err
			}
		}
	})
}

// FromFunc returns a source that calls next for each payload until it
// returns io.EOF. Offsets count frames (0, 1, 2, …) and Rate is 0: use it
// for inputs without media time such as sentences of text.
func FromFunc[T any](name string, next func(ctx context.Context) (T, error)) *Source[T] {
	return NewSource(name, func(ctx context.Context, emit Emit[T]) error {
		for i := int64(0); ; i++ {
			v, err := next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := emit(Frame[T]{Offset: i, Payload: v}); err != nil {
				return err
			}
		}
	})
}

// FromSamples returns a source of audio: read returns the next buffer of
// samples at rate Hz (io.EOF ends the stream, and may come with a last
// non-empty buffer), and offsets advance by the number of samples read.
// read must return a buffer the pipeline may keep (not one it reuses), e.g.
// a copy of a capture device's buffer.
func FromSamples[E any](name string, rate int, read func(ctx context.Context) ([]E, error)) *Source[[]E] {
	return NewSource(name, func(ctx context.Context, emit Emit[[]E]) error {
		var off int64
		for {
			buf, err := read(ctx)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if len(buf) > 0 {
				if err := emit(Frame[[]E]{Offset: off, Rate: rate, Payload: buf}); err != nil {
					return err
				}
				off += int64(len(buf))
			}
			if err != nil {
				return nil // io.EOF
			}
		}
	})
}

// FromSlice returns a source of the items of s, in order; offsets count
// items.
func FromSlice[T any](name string, s []T) *Source[T] {
	return NewSource(name, func(ctx context.Context, emit Emit[T]) error {
		for i, v := range s {
			if err := emit(Frame[T]{Offset: int64(i), Payload: v}); err != nil {
				return err
			}
		}
		return nil
	})
}

// FromSeq returns a source of the values of seq, in order; offsets count
// values. Cancellation stops the iteration at the next value.
func FromSeq[T any](name string, seq iter.Seq[T]) *Source[T] {
	return NewSource(name, func(ctx context.Context, emit Emit[T]) error {
		var i int64
		var err error
		for v := range seq {
			if err = emit(Frame[T]{Offset: i, Payload: v}); err != nil {
				break
			}
			i++
		}
		return err
	})
}

// FromReader returns a source of the bytes of r in chunks of chunk bytes
// (the last may be shorter); offsets count bytes. Each chunk is a new slice.
func FromReader(name string, r io.Reader, chunk int) *Source[[]byte] {
	if chunk < 1 {
		chunk = 4096
	}
	return NewSource(name, func(ctx context.Context, emit Emit[[]byte]) error {
		var off int64
		for {
			buf := make([]byte, chunk)
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				if err := emit(Frame[[]byte]{Offset: off, Payload: buf[:n:n]}); err != nil {
					return err
				}
				off += int64(n)
			}
			switch {
			case err == nil:
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				return nil
			default:
				return fmt.Errorf("read at byte %d: %w", off, err)
			}
		}
	})
}

// FromPCM16 returns a source of mono 16-bit little-endian PCM read from r
// (such as the data chunk of a WAV file), as float32 samples in [-1, 1) at
// rate Hz, samples per frame (the last frame may be shorter). A trailing odd
// byte is an error: it means the stream was cut inside a sample.
func FromPCM16(name string, r io.Reader, rate, samples int) *Source[[]float32] {
	if samples < 1 {
		samples = 1024
	}
	return NewSource(name, func(ctx context.Context, emit Emit[[]float32]) error {
		raw := make([]byte, 2*samples)
		var off int64
		for {
			n, err := io.ReadFull(r, raw)
			if n%2 != 0 {
				return fmt.Errorf("truncated PCM16 stream: odd trailing byte after sample %d", off+int64(n/2))
			}
			if n > 0 {
				pcm := make([]float32, n/2)
				for i := range pcm {
					pcm[i] = float32(int16(binary.LittleEndian.Uint16(raw[2*i:]))) / 32768
				}
				if err := emit(Frame[[]float32]{Offset: off, Rate: rate, Payload: pcm}); err != nil {
					return err
				}
				off += int64(len(pcm))
			}
			switch {
			case err == nil:
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				return nil
			default:
				return fmt.Errorf("read PCM16 at sample %d: %w", off, err)
			}
		}
	})
}
