package audio

import (
	"errors"
	"fmt"
	"time"
)

// Errors that name what is wrong with an input. Returned errors wrap one of
// these (test with errors.Is) and add the offending values.
var (
	// ErrNotWAV: the input does not start with a RIFF/WAVE header.
	ErrNotWAV = errors.New("not a RIFF/WAVE file")
	// ErrTruncated: the input ends inside the header, inside a chunk, or
	// inside a sample frame, or has fewer sample bytes than the header
	// declares.
	ErrTruncated = errors.New("truncated audio")
	// ErrUnsupportedCodec: the samples are compressed or in a sample format
	// this package does not decode (ADPCM or µ-law in WAV, 64-bit float,
	// or a file format it recognises but does not decode: AAC/MP4,
	// Ogg/Opus, Ogg/FLAC, ...); the message names it.
	ErrUnsupportedCodec = errors.New("unsupported audio codec")
	// ErrUnknownFormat: the first bytes match no audio format this package
	// knows; the message shows them (as hex, and as text when printable).
	ErrUnknownFormat = errors.New("unrecognised audio format")
	// ErrCorrupt: a compressed stream (FLAC, MP3, Ogg/Vorbis) fails to
	// decode past its header: a bad frame or page, a checksum mismatch, or
	// a decoder failure.
	ErrCorrupt = errors.New("corrupt audio data")
	// ErrNoChannels: the header declares zero channels.
	ErrNoChannels = errors.New("zero channels")
	// ErrTooLarge: a size or count is beyond any sane audio file (channel
	// count, format chunk length).
	ErrTooLarge = errors.New("absurd size in audio header")
	// ErrSampleRate: the sample rate is outside MinSampleRate..MaxSampleRate.
	// Rates below are not audio anyone records, and resampling them to a
	// model's rate multiplies a small file into hours of samples; rates
	// above are beyond any converter in use.
	ErrSampleRate = errors.New("sample rate out of range")
	// ErrBadHeader: the header is malformed in some other way (missing fmt
	// chunk, inconsistent block alignment, ...).
	ErrBadHeader = errors.New("malformed audio header")
	// ErrBadFormat: a Format passed by the caller is invalid.
	ErrBadFormat = errors.New("invalid audio format")
	// ErrNotFinite: a sample to be written is NaN or infinite.
	ErrNotFinite = errors.New("sample is NaN or infinite")
)

// Limits beyond which a header or Format is rejected.
const (
	// MaxChannels is the largest channel count accepted (ErrTooLarge).
	MaxChannels = 256
	// MinSampleRate is the lowest sample rate accepted, in Hz
	// (ErrSampleRate): with it, turning a file into 16 kHz audio yields at
	// most 16 samples per input sample.
	MinSampleRate = 1_000
	// MaxSampleRate is the highest sample rate accepted, in Hz
	// (ErrSampleRate): 384 kHz, the highest rate converters ship with.
	MaxSampleRate = 384_000
)

// Encoding is how one PCM sample is stored.
type Encoding uint8

// Sample encodings, all little-endian.
const (
	// Uint8 is unsigned 8-bit PCM, 128 = silence (the only 8-bit form WAV has).
	Uint8 Encoding = iota + 1
	// Int16 is signed 16-bit PCM (s16le).
	Int16
	// Int24 is signed 24-bit PCM packed in 3 bytes.
	Int24
	// Int32 is signed 32-bit PCM.
	Int32
	// Float32 is IEEE-754 32-bit float, nominally in [-1, 1].
	Float32
)

// Bytes returns the size of one sample, or 0 for an invalid Encoding.
func (e Encoding) Bytes() int {
	switch e {
	case Uint8:
		return 1
	case Int16:
		return 2
	case Int24:
		return 3
	case Int32, Float32:
		return 4
	}
	return 0
}

// String names the encoding as in a sox/ffmpeg format name.
func (e Encoding) String() string {
	switch e {
	case Uint8:
		return "u8"
	case Int16:
		return "s16le"
	case Int24:
		return "s24le"
	case Int32:
		return "s32le"
	case Float32:
		return "f32le"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// Format describes interleaved PCM.
type Format struct {
	SampleRate int      // frames per second, per channel
	Channels   int      // samples per frame
	Encoding   Encoding // how each sample is stored
}

// S16Mono returns the format of headerless 16-bit mono PCM at rate Hz, the
// layout of raw speech files such as goforward.raw.
func S16Mono(rate int) Format { return Format{SampleRate: rate, Channels: 1, Encoding: Int16} }

// Validate reports whether f describes PCM this package can read and write.
func (f Format) Validate() error {
	switch {
	case f.Encoding.Bytes() == 0:
		return fmt.Errorf("%w: unknown sample encoding %d", ErrBadFormat, uint8(f.Encoding))
	case f.Channels <= 0:
		return fmt.Errorf("%w: %d channels", ErrBadFormat, f.Channels)
	case f.Channels > MaxChannels:
		return fmt.Errorf("%w: %d channels (at most %d)", ErrBadFormat, f.Channels, MaxChannels)
	case f.SampleRate < MinSampleRate || f.SampleRate > MaxSampleRate:
		return fmt.Errorf("%w: %w: %d Hz (want %d..%d)", ErrBadFormat, ErrSampleRate, f.SampleRate, MinSampleRate, MaxSampleRate)
	}
	return nil
}

// BlockAlign returns the size of one frame (one sample of every channel).
func (f Format) BlockAlign() int { return f.Channels * f.Encoding.Bytes() }

// Clip is mono audio held in memory.
type Clip struct {
	Samples    []float32 // mono samples, nominally in [-1, 1)
	SampleRate int       // Hz
}

// Duration returns the playing time of c.
func (c Clip) Duration() time.Duration {
	if c.SampleRate <= 0 {
		return 0
	}
	return time.Duration(float64(len(c.Samples)) / float64(c.SampleRate) * float64(time.Second))
}
