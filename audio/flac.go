package audio

import (
	"errors"
	"fmt"
	"io"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
)

// flacSource decodes native FLAC through github.com/mewkiz/flac, frame by
// frame. The STREAMINFO block is validated as a WAV header is (rate,
// channels, bit depth), and every frame must agree with it, so that a
// damaged frame header cannot change the layout mid-stream.
type flacSource struct {
	s        *flac.Stream
	format   Format
	bits     int
	total    uint64 // samples per channel STREAMINFO declares; 0 unknown
	decoded  uint64 // samples per channel delivered so far
	frameNum int
}

// newFLACSource parses the signature and metadata blocks (skipping all but
// STREAMINFO without buffering them).
func newFLACSource(r io.Reader) (*flacSource, Format, int64, error) {
	var s *flac.Stream
	err := safely("mewkiz/flac", func() error {
		var err error
		s, err = flac.New(r)
		return err
	})
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, Format{}, 0, fmt.Errorf("audio: %w: FLAC input ends inside the metadata blocks", ErrTruncated)
		}
		return nil, Format{}, 0, fmt.Errorf("audio: %w: FLAC metadata: %w", ErrBadHeader, err)
	}
	si := s.Info
	switch {
	case si.NChannels == 0:
		return nil, Format{}, 0, fmt.Errorf("audio: FLAC: %w", ErrNoChannels)
	case si.SampleRate < MinSampleRate || si.SampleRate > MaxSampleRate:
		return nil, Format{}, 0, fmt.Errorf("audio: %w: FLAC STREAMINFO declares %d Hz (want %d..%d)", ErrSampleRate, si.SampleRate, MinSampleRate, MaxSampleRate)
	case si.BitsPerSample < 4 || si.BitsPerSample > 32:
		return nil, Format{}, 0, fmt.Errorf("audio: %w: FLAC STREAMINFO declares %d bits per sample", ErrBadHeader, si.BitsPerSample)
	}
	f := Format{SampleRate: int(si.SampleRate), Channels: int(si.NChannels), Encoding: Int32}
	switch {
	case si.BitsPerSample <= 16:
		f.Encoding = Int16
	case si.BitsPerSample <= 24:
		f.Encoding = Int24
	}
	frames := int64(-1)
	if si.NSamples > 0 {
		frames = int64(min(si.NSamples, 1<<62))
	}
	return &flacSource{s: s, format: f, bits: int(si.BitsPerSample), total: si.NSamples}, f, frames, nil
}

// scale is the factor that maps a decoded sample into [-1, 1): FLAC
// samples are right-justified, so a 12-bit sample spans ±2^11.
func (d *flacSource) scale() float64 { return 1 / float64(uint64(1)<<(d.bits-1)) }

// next implements codecSource.
func (d *flacSource) next(dst []int) ([]int, error) {
	var fr *frame.Frame
	err := safely("mewkiz/flac", func() error {
		var err error
		fr, err = d.s.Next()
		if err != nil {
			return err
		}
		if err := d.check(fr); err != nil {
			return err
		}
		if fr.BitsPerSample == 0 {
			fr.BitsPerSample = uint8(d.bits) // "as in STREAMINFO"
		}
		err = fr.Parse()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // inside a frame whose header arrived
		}
		return err
	})
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if d.total > 0 && d.decoded < d.total {
			return dst, fmt.Errorf("audio: %w: FLAC STREAMINFO declares %d samples, input ends after %d", ErrTruncated, d.total, d.decoded)
		}
		return dst, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return dst, fmt.Errorf("audio: %w: FLAC input ends inside frame %d (after %d samples)", ErrTruncated, d.frameNum, d.decoded)
	case errors.Is(err, ErrBadHeader):
		return dst, err
	default:
		return dst, fmt.Errorf("audio: %w: FLAC frame %d: %w", ErrCorrupt, d.frameNum, err)
	}
	d.frameNum++
	n := int(fr.BlockSize)
	ch := d.format.Channels
	for i := range n {
		for c := range ch {
			dst = append(dst, int(fr.Subframes[c].Samples[i]))
		}
	}
	d.decoded += uint64(n)
	return dst, nil
}

// check refuses a frame whose layout differs from STREAMINFO's.
func (d *flacSource) check(fr *frame.Frame) error {
	switch {
	case fr.Channels.Count() != d.format.Channels:
		return fmt.Errorf("audio: %w: FLAC frame %d has %d channels, STREAMINFO %d", ErrBadHeader, d.frameNum, fr.Channels.Count(), d.format.Channels)
	case fr.BitsPerSample != 0 && int(fr.BitsPerSample) != d.bits:
		return fmt.Errorf("audio: %w: FLAC frame %d has %d bits per sample, STREAMINFO %d", ErrBadHeader, d.frameNum, fr.BitsPerSample, d.bits)
	case fr.SampleRate != 0 && int(fr.SampleRate) != d.format.SampleRate:
		return fmt.Errorf("audio: %w: FLAC frame %d is at %d Hz, STREAMINFO %d Hz", ErrBadHeader, d.frameNum, fr.SampleRate, d.format.SampleRate)
	}
	return nil
}
