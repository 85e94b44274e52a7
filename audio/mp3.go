package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	mp3 "github.com/hajimehoshi/go-mp3"
)

// mp3DecoderDelay is the delay of the standard MPEG Layer III synthesis
// (polyphase filter bank plus IMDCT overlap), in samples: LAME's gapless
// figures count on every decoder adding it, go-mp3 included.
const mp3DecoderDelay = 529

// mpegHeader is what a Layer III frame header says.
type mpegHeader struct {
	mpeg1      bool // MPEG-1 (else 2 or 2.5: half the samples per frame)
	sampleRate int
	channels   int
	crc        bool // a 16-bit CRC follows the header
	frameLen   int  // bytes, header included
}

// samplesPerFrame is 1152 for MPEG-1 Layer III, 576 for MPEG-2/2.5.
func (h mpegHeader) samplesPerFrame() int {
	if h.mpeg1 {
		return 1152
	}
	return 576
}

// sideInfoLen is the length of the side information after the header.
func (h mpegHeader) sideInfoLen() int {
	switch {
	case h.mpeg1 && h.channels == 1:
		return 17
	case h.mpeg1:
		return 32
	case h.channels == 1:
		return 9
	}
	return 17
}

var (
	mp3Bitrates1 = [15]int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
	mp3Bitrates2 = [15]int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
	mp3Rates     = [4][3]int{
		{11025, 12000, 8000},  // MPEG-2.5
		{},                    // reserved
		{22050, 24000, 16000}, // MPEG-2
		{44100, 48000, 32000}, // MPEG-1
	}
)

// errNotMPEG: four bytes are not a Layer III frame header go-mp3 decodes.
var errNotMPEG = errors.New("not an MPEG Layer III frame header")

// parseMPEGHeader decodes a Layer III frame header (free-format bitrates,
// which go-mp3 does not decode, are refused).
func parseMPEGHeader(h uint32) (mpegHeader, error) {
	version := (h >> 19) & 3
	layer := (h >> 17) & 3
	bitrate := (h >> 12) & 15
	rate := (h >> 10) & 3
	if h>>21 != 0x7FF || version == 1 || layer != 1 || bitrate == 0 || bitrate == 15 || rate == 3 {
		return mpegHeader{}, errNotMPEG
	}
	m := mpegHeader{
		mpeg1:      version == 3,
		sampleRate: mp3Rates[version][rate],
		channels:   2,
		crc:        (h>>16)&1 == 0,
	}
	if (h>>6)&3 == 3 {
		m.channels = 1
	}
	pad := int((h >> 9) & 1)
	if m.mpeg1 {
		m.frameLen = 144000*mp3Bitrates1[bitrate]/m.sampleRate + pad
	} else {
		m.frameLen = 72000*mp3Bitrates2[bitrate]/m.sampleRate + pad
	}
	return m, nil
}

// mp3Source decodes MP3 through github.com/hajimehoshi/go-mp3. go-mp3 ends a
// stream cut inside a frame as if it ended cleanly and always yields 16-bit
// stereo; so the bytes it reads pass through a frameWalker that knows where
// each frame ends (a cut is ErrTruncated, as for WAV), and mono sources
// keep one channel. A LAME/Xing header frame, when present, is dropped and
// its encoder delay and padding trimmed (gapless), so that sample 0 is the
// first sample the encoder was given: timestamps then match the source.
type mp3Source struct {
	dec      *mp3.Decoder
	walk     *frameWalker
	channels int
	buf      []byte
	skip     int64 // samples still to drop at the start
	left     int64 // samples still to deliver; -1 when unknown
}

// newMP3Source reads the first frame header (after any ID3v2 tags, already
// skipped) and sets up go-mp3.
func newMP3Source(r io.Reader) (*mp3Source, Format, int64, error) {
	walk := &frameWalker{r: r}
	var first [4]byte
	if _, err := io.ReadFull(walk, first[:]); err != nil {
		return nil, Format{}, 0, mp3ReadErr("reading the first frame header", err)
	}
	h, err := parseMPEGHeader(binary.BigEndian.Uint32(first[:]))
	if err != nil {
		return nil, Format{}, 0, fmt.Errorf("audio: %w: MP3 starts with % x, %v", ErrBadHeader, first, err)
	}
	// The first frame, whole, tells whether it is a Xing/LAME header.
	frame := make([]byte, h.frameLen)
	copy(frame, first[:])
	if _, err := io.ReadFull(walk, frame[4:]); err != nil {
		return nil, Format{}, 0, mp3ReadErr("reading the first frame", err)
	}
	s := &mp3Source{walk: walk, channels: h.channels, left: -1}
	g, isInfo := parseGapless(frame, h)
	rest := io.Reader(walk)
	if !isInfo {
		// An audio frame: hand it back to go-mp3 in front of the rest.
		rest = io.MultiReader(bytes.NewReader(frame), walk)
	}
	if g.known {
		s.skip = int64(g.delay + mp3DecoderDelay)
		if g.frames > 0 {
			s.left = max(0, g.frames*int64(h.samplesPerFrame())-int64(g.delay)-int64(g.padding))
		}
	} else {
		s.skip = mp3DecoderDelay
	}
	f := Format{SampleRate: h.sampleRate, Channels: h.channels, Encoding: Int16}
	err = safely("go-mp3", func() error {
		var err error
		s.dec, err = mp3.NewDecoder(onlyReader{rest})
		return err
	})
	switch {
	case err == nil:
	case walk.cutErr() != nil:
		return nil, Format{}, 0, walk.cutErr()
	case errors.Is(err, io.EOF):
		// A header frame and no audio: an empty stream.
		s.dec, s.left = nil, 0
		return s, f, 0, nil
	default:
		return nil, Format{}, 0, fmt.Errorf("audio: %w: MP3: %w", ErrCorrupt, err)
	}
	if s.dec.SampleRate() != h.sampleRate {
		return nil, Format{}, 0, fmt.Errorf("audio: %w: go-mp3 decodes %d Hz from a %d Hz header", ErrCorrupt, s.dec.SampleRate(), h.sampleRate)
	}
	return s, f, s.left, nil
}

// mp3ReadErr turns a failed read of the first frame into a named error.
func mp3ReadErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("audio: %w: MP3 input ends while %s", ErrTruncated, what)
	}
	return fmt.Errorf("audio: MP3 %s: %w", what, err)
}

// next implements codecSource.
func (s *mp3Source) next(dst []int) ([]int, error) {
	for {
		if s.left == 0 || s.dec == nil {
			return dst, io.EOF
		}
		if cap(s.buf) == 0 {
			s.buf = make([]byte, 4*1152)
		}
		var n int
		err := safely("go-mp3", func() error {
			var err error
			n, err = s.dec.Read(s.buf[:cap(s.buf)])
			return err
		})
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cut := s.walk.cutErr(); cut != nil {
					return dst, cut
				}
				if s.left > 0 {
					// The LAME header counted more frames than arrived,
					// though the last one ended whole.
					return dst, fmt.Errorf("audio: %w: the LAME header declares %d more samples", ErrTruncated, s.left)
				}
				return dst, io.EOF
			}
			if cut := s.walk.cutErr(); cut != nil {
				return dst, cut
			}
			return dst, fmt.Errorf("audio: %w: MP3: %w", ErrCorrupt, err)
		}
		frames := int64(n / 4) // go-mp3 always gives s16le stereo
		b := s.buf[:frames*4]
		if s.skip > 0 {
			drop := min(s.skip, frames)
			s.skip -= drop
			b = b[drop*4:]
			frames -= drop
		}
		if s.left >= 0 {
			frames = min(frames, s.left)
			s.left -= frames
		}
		for i := range frames {
			l := int(int16(binary.LittleEndian.Uint16(b[4*i:])))
			if s.channels == 1 {
				dst = append(dst, l)
				continue
			}
			dst = append(dst, l, int(int16(binary.LittleEndian.Uint16(b[4*i+2:]))))
		}
		if len(dst) > 0 {
			return dst, nil
		}
	}
}

// gapless is what a Xing/Info frame's LAME extension says.
type gapless struct {
	known          bool  // a LAME tag gave delay and padding
	delay, padding int   // samples the encoder added at the start and end
	frames         int64 // audio frames in the file (Xing), 0 when unknown
}

// parseGapless reports whether frame is a Xing/Info header frame and reads
// its frame count and LAME delay/padding.
func parseGapless(frame []byte, h mpegHeader) (gapless, bool) {
	off := 4 + h.sideInfoLen()
	if h.crc {
		off += 2
	}
	if len(frame) < off+8 {
		return gapless{}, false
	}
	tag := string(frame[off : off+4])
	if tag != "Xing" && tag != "Info" {
		return gapless{}, false
	}
	var g gapless
	flags := binary.BigEndian.Uint32(frame[off+4:])
	p := off + 8
	if flags&1 != 0 && len(frame) >= p+4 {
		g.frames = int64(binary.BigEndian.Uint32(frame[p:]))
		p += 4
	}
	if flags&2 != 0 {
		p += 4
	}
	if flags&4 != 0 {
		p += 100
	}
	if flags&8 != 0 {
		p += 4
	}
	// LAME extension: 9-byte encoder string, then 12 bytes, then 24 bits
	// holding the 12-bit encoder delay and 12-bit padding.
	if len(frame) >= p+24 && string(frame[p:p+4]) == "LAME" || len(frame) >= p+24 && string(frame[p:p+4]) == "Lavc" {
		d := frame[p+21:]
		g.delay = int(d[0])<<4 | int(d[1])>>4
		g.padding = int(d[1]&15)<<8 | int(d[2])
		g.known = true
	}
	return g, true
}

// frameWalker passes the MP3 bytes through to go-mp3 while following the
// frame layout, so that the end of input can be told apart: at a frame
// boundary (clean) or inside a frame (cut). Once the bytes at a boundary
// are not a frame header (an ID3v1 or APE tag, junk) it stops judging.
type frameWalker struct {
	r       io.Reader
	hdr     [4]byte
	nhdr    int   // header bytes of the current frame seen so far
	left    int   // bytes of the current frame's body still to come
	lost    bool  // stopped following frames
	offset  int64 // bytes read
	frameAt int64 // offset of the current frame
	eof     bool
}

func (w *frameWalker) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.follow(p[:n])
	if errors.Is(err, io.EOF) {
		w.eof = true
	}
	return n, err
}

// follow advances the frame layout over b.
func (w *frameWalker) follow(b []byte) {
	for len(b) > 0 && !w.lost {
		if w.left > 0 {
			k := min(w.left, len(b))
			w.left -= k
			b = b[k:]
			w.offset += int64(k)
			continue
		}
		if w.nhdr == 0 {
			w.frameAt = w.offset
		}
		w.hdr[w.nhdr] = b[0]
		w.nhdr++
		b = b[1:]
		w.offset++
		if w.nhdr < 4 {
			continue
		}
		w.nhdr = 0
		h, err := parseMPEGHeader(binary.BigEndian.Uint32(w.hdr[:]))
		if err != nil {
			w.lost = true
			return
		}
		w.left = h.frameLen - 4
	}
}

// cutErr returns the truncation the input ended with, if it ended inside a
// frame, else nil.
func (w *frameWalker) cutErr() error {
	if !w.eof || w.lost || (w.left == 0 && w.nhdr == 0) {
		return nil
	}
	return fmt.Errorf("audio: %w: MP3 input ends inside the frame at byte %d", ErrTruncated, w.frameAt)
}

// onlyReader hides every method but Read: go-mp3 scans a whole seekable
// input up front, which would read it twice.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
