package audio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// codecSource is a compressed stream's decoder as the Reader drives it.
type codecSource interface {
	// next appends the next block of interleaved integer samples to dst
	// (whole frames only) and returns it. At the end it returns io.EOF, or
	// an error wrapping ErrTruncated when the input was cut; dst may hold
	// samples along with an error.
	next(dst []int) ([]int, error)
}

// Open sniffs the format of r from its first bytes (not from a file name)
// and returns a Reader of mono float32 samples: WAV (as NewWAVReader),
// FLAC (github.com/mewkiz/flac), MP3 (github.com/hajimehoshi/go-mp3), each
// after any ID3v2 tags, or Ogg/Vorbis (github.com/jfreymuth/oggvorbis;
// chained streams of the same rate and channels are read one after the
// other). A format it recognises but does not decode (AAC/MP4, Ogg/Opus,
// Ogg/FLAC, Ogg/Speex, AIFF, ...) fails with an error wrapping
// ErrUnsupportedCodec that names it; unrecognised bytes fail with
// ErrUnknownFormat. Truncation is reported as for WAV, whatever the
// format: errors wrap ErrTruncated and the Reader yields every whole frame
// (for Ogg/Vorbis: every whole page) before the cut. r need not be
// seekable; Open reads ahead of what it returns, so r must not be read
// elsewhere afterwards.
func Open(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 4096)
	c, err := sniffStream(br)
	if err != nil {
		return nil, err
	}
	switch c {
	case FLAC:
		return openFLAC(br)
	case MP3:
		return openMP3(br)
	case OggVorbis:
		return openVorbis(br)
	}
	return NewWAVReader(br)
}

// openFLAC returns a Reader of the FLAC stream r.
func openFLAC(r io.Reader) (*Reader, error) {
	src, f, frames, err := newFLACSource(r)
	if err != nil {
		return nil, err
	}
	return &Reader{format: f, container: FLAC, dataBytes: -1, frames: frames, codec: src, scale: src.scale()}, nil
}

// openMP3 returns a Reader of the MP3 stream r (ID3v2 tags skipped).
func openMP3(r io.Reader) (*Reader, error) {
	src, f, frames, err := newMP3Source(r)
	if err != nil {
		return nil, err
	}
	return &Reader{format: f, container: MP3, dataBytes: -1, frames: frames, codec: src, scale: 1.0 / 32768}, nil
}

// openVorbis returns a Reader of the Ogg/Vorbis stream r. Its length is
// unknown: only the last page tells it.
func openVorbis(r io.Reader) (*Reader, error) {
	src, f, err := newVorbisSource(r)
	if err != nil {
		return nil, err
	}
	return &Reader{format: f, container: OggVorbis, dataBytes: -1, frames: -1, codec: src}, nil
}

// readFormats ends the error for a format Open does not read.
const readFormats = "WAV, FLAC, MP3 and Ogg/Vorbis are read"

// whyUnsupported says why a format that users ask for is not read.
var whyUnsupported = map[Container]string{
	OggOpus: "no pure-Go Opus decoder is built in (github.com/pion/opus decodes SILK frames only, not CELT or hybrid ones; github.com/hraban/opus wraps libopus through cgo)",
}

// sniffStream skips ID3v2 tags and names the format that follows, failing
// for any format Open does not decode.
func sniffStream(br *bufio.Reader) (Container, error) {
	skipped := int64(0)
	for {
		head, err := br.Peek(sniffLen)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return UnknownContainer, fmt.Errorf("audio: reading the file header: %w", err)
		}
		ended := len(head) < sniffLen
		c, detail := Sniff(head)
		if c == MP3 && strings.HasPrefix(string(head), "ID3") {
			n, err := skipID3v2(br, head)
			skipped += n
			if err != nil {
				return UnknownContainer, err
			}
			continue
		}
		switch {
		case c.Decodable():
			return c, nil
		case len(head) == 0 && skipped > 0:
			return UnknownContainer, fmt.Errorf("audio: %w: input ends after a %d-byte ID3v2 tag", ErrTruncated, skipped)
		case len(head) == 0:
			return UnknownContainer, fmt.Errorf("audio: %w: empty input", ErrTruncated)
		case c == UnknownContainer && ended:
			if name := magicPrefixOf(head); name != "" {
				return UnknownContainer, fmt.Errorf("audio: %w: input ends after %d bytes, inside a %s header", ErrTruncated, len(head), name)
			}
		case c == Ogg && ended && oggCut(head):
			return c, fmt.Errorf("audio: %w: input ends after %d bytes, before the first Ogg packet names its codec", ErrTruncated, len(head))
		}
		if c == UnknownContainer {
			where := ""
			if skipped > 0 {
				where = fmt.Sprintf(" after a %d-byte ID3v2 tag", skipped)
			}
			return c, fmt.Errorf("audio: %w%s: %s; %s", ErrUnknownFormat, where, detail, readFormats)
		}
		if detail != "" {
			detail = " (" + detail + ")"
		}
		why := whyUnsupported[c]
		if why != "" {
			why = ": " + why
		}
		return c, fmt.Errorf("audio: %w: %s%s is not supported%s; %s", ErrUnsupportedCodec, c, detail, why, readFormats)
	}
}

// skipID3v2 discards the ID3v2 tag at the start of br (head is its first
// bytes) and returns how many bytes it skipped.
func skipID3v2(br *bufio.Reader, head []byte) (int64, error) {
	if len(head) < 10 {
		return 0, fmt.Errorf("audio: %w: input ends after %d bytes, inside an ID3v2 header", ErrTruncated, len(head))
	}
	for _, b := range head[6:10] {
		if b&0x80 != 0 {
			return 0, fmt.Errorf("audio: %w: ID3v2 tag size % x is not a synchsafe integer", ErrBadHeader, head[6:10])
		}
	}
	size := int64(head[6])<<21 | int64(head[7])<<14 | int64(head[8])<<7 | int64(head[9])
	size += 10
	if head[5]&0x10 != 0 {
		size += 10 // footer
	}
	n, err := br.Discard(int(size))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return int64(n), fmt.Errorf("audio: %w: ID3v2 tag declares %d bytes, input ends after %d", ErrTruncated, size, n)
		}
		return int64(n), fmt.Errorf("audio: skipping the ID3v2 tag: %w", err)
	}
	return int64(n), nil
}

// magicPrefixOf names the format whose magic a short input is the start
// of, or returns "".
func magicPrefixOf(head []byte) string {
	for _, m := range []struct{ magic, name string }{{"RIFF", "WAV"}, {"fLaC", "FLAC"}, {"OggS", "Ogg"}, {"ID3", "ID3v2"}} {
		if len(head) < len(m.magic) && strings.HasPrefix(m.magic, string(head)) {
			return m.name
		}
	}
	if len(head) < 4 && head[0] == 0xFF && (len(head) < 2 || head[1]&0xE0 == 0xE0) {
		return "MPEG frame"
	}
	return ""
}

// Decode reads a whole WAV, FLAC, MP3 or Ogg/Vorbis stream (sniffed as
// Open does) into a mono Clip. On ErrTruncated the Clip still holds every whole frame
// before the cut.
func Decode(r io.Reader) (Clip, error) {
	rd, err := Open(r)
	if err != nil {
		return Clip{}, err
	}
	return rd.readAll(-1)
}

// DecodeFile reads a WAV, FLAC, MP3 or Ogg/Vorbis file into a mono Clip;
// the format comes from the content, never the file name.
func DecodeFile(path string) (Clip, error) {
	f, err := os.Open(path)
	if err != nil {
		return Clip{}, fmt.Errorf("audio: %w", err)
	}
	defer f.Close()
	c, err := Decode(f)
	if err != nil {
		return c, fmt.Errorf("%w (file %s)", err, path)
	}
	return c, nil
}

// Container returns the format the Reader decodes (RawPCM for
// NewRawReader).
func (r *Reader) Container() Container { return r.container }

// readCodec is Read for compressed formats.
func (r *Reader) readCodec(dst []float32) (int, error) {
	ch := r.format.Channels
	n := 0
	for n < len(dst) {
		if len(r.pending) == 0 {
			if r.codecErr != nil {
				break
			}
			var blk []int
			blk, r.codecErr = r.codec.next(r.block[:0])
			r.block, r.pending = blk, blk
			if len(blk)%ch != 0 { // a decoder bug; never split a frame
				r.codecErr = fmt.Errorf("audio: %w: decoder gave %d samples for %d channels", ErrCorrupt, len(blk), ch)
				r.pending = nil
			}
			continue
		}
		k := min(len(dst)-n, len(r.pending)/ch)
		r.convert(dst[n:n+k], r.pending[:k*ch])
		r.pending = r.pending[k*ch:]
		n += k
	}
	if n == len(dst) {
		return n, nil
	}
	r.err = r.codecErr
	if n > 0 && r.err == io.EOF {
		return n, nil
	}
	return n, r.err
}

// safely runs a decoder library call, turning a panic into an error
// wrapping ErrCorrupt so that none escapes this package.
func safely(lib string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("audio: %w: %s panicked: %v", ErrCorrupt, lib, p)
		}
	}()
	return f()
}
