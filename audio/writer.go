package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Writer streams samples into a WAV container, or as bare PCM
// (NewRawWriter). Sizes in a WAV header are written as "unknown"
// (0x7FFFF000 bytes of data, as sox does on a pipe; see streamSize) and
// patched by Close when the destination can seek, so the same Writer
// serves files and stdout. A stream that simply stops (the writer is
// never closed, or is closed on a pipe) is still a valid WAV: readers take
// "unknown" as "until the end of input", and every Write leaves whole
// frames. A Writer is not safe for concurrent use.
type Writer struct {
	w        io.Writer
	format   Format
	buf      []byte
	n        int64 // sample bytes written
	hdrLen   int64
	err      error // sticky
	closed   bool
	ownSize  bool // header already holds the exact size (WriteWAV)
	seekable bool // w seeks (an *os.File on a pipe has Seek, which fails)
	raw      bool // no container: samples only
}

// NewWAVWriter writes a WAV header for format f to w and returns a Writer
// for its samples. f.Encoding may be any Encoding; Int16 and Float32 are the
// usual choices.
func NewWAVWriter(w io.Writer, f Format) (*Writer, error) {
	return newWAVWriter(w, f, streamSize, false)
}

// NewRawWriter returns a Writer of bare interleaved samples in format f,
// no header (raw PCM, as piper's --output-raw writes: s16le for Int16);
// its Close writes nothing.
func NewRawWriter(w io.Writer, f Format) (*Writer, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("audio: raw writer: %w", err)
	}
	return &Writer{w: w, format: f, raw: true}, nil
}

// newWAVWriter writes a header declaring dataBytes of samples: their exact
// size when known, else streamSize (patched by Close where w seeks).
func newWAVWriter(w io.Writer, f Format, dataBytes uint32, known bool) (*Writer, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("audio: WAV writer: %w", err)
	}
	seekable := false
	if s, ok := w.(io.WriteSeeker); ok {
		_, err := s.Seek(0, io.SeekCurrent)
		seekable = err == nil
	}
	h := wavHeader(f, dataBytes)
	if _, err := w.Write(h); err != nil {
		return nil, fmt.Errorf("audio: writing WAV header: %w", err)
	}
	return &Writer{w: w, format: f, hdrLen: int64(len(h)), ownSize: known, seekable: seekable}, nil
}

// Write appends interleaved samples (len(samples) must be a multiple of the
// channel count). Integer encodings round to nearest and clip to the
// encoding's range; so a sample read from a 16-bit WAV is written back
// bit-exactly. NaN or ±Inf is refused with ErrNotFinite and nothing of
// samples is written.
func (w *Writer) Write(samples []float32) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("audio: write to a closed writer")
	}
	if len(samples)%w.format.Channels != 0 {
		return fmt.Errorf("audio: %w: %d samples is not a whole number of %d-channel frames", ErrBadFormat, len(samples), w.format.Channels)
	}
	for i, s := range samples {
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			return fmt.Errorf("audio: %w: sample %d of this write is %v", ErrNotFinite, i, s)
		}
	}
	const chunk = 8192
	for len(samples) > 0 {
		part := samples[:min(len(samples), chunk)]
		samples = samples[len(part):]
		w.buf = encode(w.buf[:0], part, w.format.Encoding)
		if _, err := w.w.Write(w.buf); err != nil {
			w.err = fmt.Errorf("audio: writing samples: %w", err)
			return w.err
		}
		w.n += int64(len(w.buf))
	}
	return nil
}

// Close finishes the file: it writes the pad byte an odd-length data chunk
// needs and, if the destination is an io.WriteSeeker, patches the sizes in
// the header. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil || w.raw {
		return w.err
	}
	if w.ownSize {
		if w.n&1 == 1 {
			if _, err := w.w.Write([]byte{0}); err != nil {
				return fmt.Errorf("audio: writing WAV pad byte: %w", err)
			}
		}
		return nil
	}
	if !w.seekable || w.n > unknownSize-w.hdrLen-1 {
		// A pipe, or more than a RIFF size field can say: the header keeps
		// "unknown", which readers treat as "until end of input".
		return nil
	}
	if w.n&1 == 1 {
		if _, err := w.w.Write([]byte{0}); err != nil {
			return fmt.Errorf("audio: writing WAV pad byte: %w", err)
		}
	}
	h := wavHeader(w.format, uint32(w.n))
	ws := w.w.(io.WriteSeeker)
	if _, err := ws.Seek(-(w.hdrLen + w.n + w.n&1), io.SeekCurrent); err != nil {
		return fmt.Errorf("audio: seeking to patch the WAV header: %w", err)
	}
	if _, err := ws.Write(h); err != nil {
		return fmt.Errorf("audio: patching the WAV header: %w", err)
	}
	if _, err := ws.Seek(0, io.SeekEnd); err != nil {
		return fmt.Errorf("audio: seeking past the WAV data: %w", err)
	}
	return nil
}

// encode appends samples in encoding e.
func encode(b []byte, samples []float32, e Encoding) []byte {
	le := binary.LittleEndian
	switch e {
	case Uint8:
		for _, s := range samples {
			b = append(b, uint8(quantize(s, 128)+128))
		}
	case Int16:
		for _, s := range samples {
			b = le.AppendUint16(b, uint16(int16(quantize(s, 32768))))
		}
	case Int24:
		for _, s := range samples {
			v := uint32(int32(quantize(s, 8388608)))
			b = append(b, byte(v), byte(v>>8), byte(v>>16))
		}
	case Int32:
		for _, s := range samples {
			b = le.AppendUint32(b, uint32(int32(quantize(s, 2147483648))))
		}
	case Float32:
		for _, s := range samples {
			b = le.AppendUint32(b, math.Float32bits(s))
		}
	}
	return b
}

// quantize maps s in [-1, 1) to an integer in [-full, full-1], rounding to
// nearest and clipping.
func quantize(s float32, full float64) int64 {
	v := math.Round(float64(s) * full)
	if v >= full {
		return int64(full) - 1
	}
	if v < -full {
		return -int64(full)
	}
	return int64(v)
}

// WriteWAV writes c as a complete mono WAV file in encoding enc, with exact
// sizes in the header (w need not seek).
func WriteWAV(w io.Writer, c Clip, enc Encoding) error {
	f := Format{SampleRate: c.SampleRate, Channels: 1, Encoding: enc}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("audio: WAV writer: %w", err)
	}
	size := int64(len(c.Samples)) * int64(enc.Bytes())
	if size >= unknownSize-64 {
		return fmt.Errorf("audio: %w: %d samples do not fit in a WAV file", ErrTooLarge, len(c.Samples))
	}
	for i, s := range c.Samples {
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			return fmt.Errorf("audio: %w: sample %d is %v", ErrNotFinite, i, s)
		}
	}
	ww, err := newWAVWriter(w, f, uint32(size), true)
	if err != nil {
		return err
	}
	if err := ww.Write(c.Samples); err != nil {
		return err
	}
	return ww.Close()
}

// WriteWAVFile writes c to path as a mono WAV file in encoding enc. On
// failure no partial file is left behind.
func WriteWAVFile(path string, c Clip, enc Encoding) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("audio: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("audio: closing %s: %w", path, cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if err := WriteWAV(f, c, enc); err != nil {
		return fmt.Errorf("%w (file %s)", err, path)
	}
	return nil
}
