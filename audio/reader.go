package audio

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	goaudio "github.com/go-audio/audio"
	"github.com/go-audio/wav"
)

// feedUnknownSize is the data length announced to go-audio/wav for a stream
// of unknown length. It must be even: go-audio/wav rounds an odd chunk size
// up by one, which would wrap 0xFFFFFFFF to zero.
const feedUnknownSize = 0xFFFFFFFE

// Reader streams mono float32 samples out of a WAV, FLAC, MP3, Ogg/Vorbis
// or raw PCM stream.
// Read fills the caller's buffer completely until the stream ends, so
// reading into a slice of N samples yields frames of N samples.
// A Reader is not safe for concurrent use.
type Reader struct {
	format    Format
	dataBytes int64 // declared sample bytes, -1 when unknown
	feed      *sampleFeed
	dec       *wav.Decoder
	ints      goaudio.IntBuffer
	scale     float64 // multiplies a decoded integer into [-1, 1)
	offset    int     // added to a decoded integer first (-128 for u8)
	err       error   // sticky: io.EOF or the error that ended the stream

	container Container
	// Compressed formats (Open): codec decodes blocks of interleaved
	// integers into block; pending is the part not yet delivered.
	codec    codecSource
	frames   int64 // the decoder's announced length, -1 unknown
	block    []int
	pending  []int
	codecErr error // how the codec's stream ended, once it has
}

// NewWAVReader parses and validates the WAV header at the start of r and
// returns a Reader positioned at the first sample. r need not be seekable.
func NewWAVReader(r io.Reader) (*Reader, error) {
	info, err := parseWAVHeader(r)
	if err != nil {
		return nil, err
	}
	rd, err := newReader(r, info.format, info.dataBytes)
	if rd != nil {
		rd.container = WAV
	}
	return rd, err
}

// NewRawReader returns a Reader over headerless interleaved PCM in format f
// (for example S16Mono(16000) for s16le mono at 16 kHz). The stream runs to
// the end of r.
func NewRawReader(r io.Reader, f Format) (*Reader, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("audio: raw PCM: %w", err)
	}
	rd, err := newReader(r, f, -1)
	if rd != nil {
		rd.container = RawPCM
	}
	return rd, err
}

func newReader(r io.Reader, f Format, dataBytes int64) (*Reader, error) {
	announced := uint32(feedUnknownSize)
	if dataBytes >= 0 {
		announced = uint32(dataBytes)
	}
	rd := &Reader{
		format:    f,
		dataBytes: dataBytes,
		feed:      &sampleFeed{head: wavHeader(f, announced), r: r, left: dataBytes},
	}
	rd.dec = wav.NewDecoder(rd.feed)
	if err := guard("reading the canonical header", func() error { return rd.dec.FwdToPCM() }); err != nil {
		return nil, err
	}
	if int(rd.dec.NumChans) != f.Channels || int(rd.dec.BitDepth) != 8*f.Encoding.Bytes() {
		return nil, fmt.Errorf("audio: go-audio/wav parsed %d channels × %d bits from a header for %d × %d",
			rd.dec.NumChans, rd.dec.BitDepth, f.Channels, 8*f.Encoding.Bytes())
	}
	switch f.Encoding {
	case Uint8:
		rd.offset, rd.scale = -128, 1.0/128
	case Int16:
		rd.scale = 1.0 / 32768
	case Int24:
		rd.scale = 1.0 / 8388608
	case Int32:
		rd.scale = 1.0 / 2147483648
	}
	return rd, nil
}

// Format returns the layout of the source samples (before the mono
// down-mix). For a compressed format, Encoding is the narrowest PCM
// encoding that holds the decoded samples exactly (Int16 for MP3 and for
// FLAC of up to 16 bits, Float32 for Ogg/Vorbis).
func (r *Reader) Format() Format { return r.format }

// SampleRate returns the source sample rate in Hz.
func (r *Reader) SampleRate() int { return r.format.SampleRate }

// Frames returns the number of mono samples the header announces, or -1
// when the length is unknown (raw PCM, a WAV written to a pipe, FLAC
// without a sample count, MP3 without a Xing/LAME header, Ogg/Vorbis,
// whose length only its last page tells).
func (r *Reader) Frames() int64 {
	if r.codec != nil {
		return r.frames
	}
	if r.dataBytes < 0 {
		return -1
	}
	return r.dataBytes / int64(r.format.BlockAlign())
}

// Read fills dst with the next mono samples. It returns len(dst) samples
// unless the stream ends first; after the last sample it returns 0, io.EOF.
// A stream cut short (fewer bytes than the header declares, or a partial
// frame at the end) returns the whole frames it has with an error wrapping
// ErrTruncated. Steady-state reads allocate only inside go-audio/wav.
func (r *Reader) Read(dst []float32) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(dst) == 0 {
		return 0, nil
	}
	if r.codec != nil {
		return r.readCodec(dst)
	}
	ch := r.format.Channels
	need := len(dst) * ch
	if cap(r.ints.Data) < need {
		r.ints.Data = make([]int, need)
	}
	r.ints.Data = r.ints.Data[:need]
	var n int
	before := r.feed.n
	err := guard("decoding samples", func() error {
		var err error
		n, err = r.dec.PCMBuffer(&r.ints)
		return err
	})
	if err != nil {
		r.err = err
		return 0, err
	}
	// go-audio/wav decodes a trailing partial sample as if it were whole
	// when the buffer fills up before it sees the end of input; count only
	// the samples whose bytes all arrived.
	n = min(n, int(r.feed.n-before)/r.format.Encoding.Bytes())
	frames := n / ch
	r.convert(dst[:frames], r.ints.Data[:frames*ch])
	if frames < len(dst) {
		r.err = r.endErr()
		if frames > 0 && r.err == io.EOF {
			return frames, nil
		}
		return frames, r.err
	}
	return frames, nil
}

// endErr says why the samples ran out: a clean end, or a truncation.
func (r *Reader) endErr() error {
	if r.feed.err != nil {
		return fmt.Errorf("audio: reading samples: %w", r.feed.err)
	}
	block := int64(r.format.BlockAlign())
	if r.dataBytes >= 0 && r.feed.n < r.dataBytes {
		return fmt.Errorf("audio: %w: data chunk declares %d bytes, input ends after %d", ErrTruncated, r.dataBytes, r.feed.n)
	}
	if rem := r.feed.n % block; rem != 0 {
		return fmt.Errorf("audio: %w: input ends %d bytes into a %d-byte frame", ErrTruncated, rem, block)
	}
	return io.EOF
}

// convert turns interleaved decoded integers into mono float32.
func (r *Reader) convert(dst []float32, src []int) {
	ch := r.format.Channels
	if r.format.Encoding == Float32 {
		if ch == 1 {
			for i, v := range src {
				dst[i] = math.Float32frombits(uint32(v))
			}
			return
		}
		for i := range dst {
			var sum float64
			for _, v := range src[i*ch : i*ch+ch] {
				sum += float64(math.Float32frombits(uint32(v)))
			}
			dst[i] = float32(sum / float64(ch))
		}
		return
	}
	if ch == 1 {
		// Exact for 8/16/24-bit: the scale is a power of two.
		s := float32(r.scale)
		for i, v := range src {
			dst[i] = float32(v+r.offset) * s
		}
		if r.format.Encoding == Int32 {
			clampBelowOne(dst)
		}
		return
	}
	s := r.scale / float64(ch)
	for i := range dst {
		var sum int64
		for _, v := range src[i*ch : i*ch+ch] {
			sum += int64(v + r.offset)
		}
		dst[i] = float32(float64(sum) * s)
	}
	if r.format.Encoding == Int32 {
		clampBelowOne(dst)
	}
}

// belowOne is the largest float32 less than 1.
const belowOne = float32(1 - 1.0/(1<<24))

// clampBelowOne keeps 32-bit PCM in [-1, 1): float32 has 24 bits of
// mantissa, so the top int32 values would otherwise round up to 1.
func clampBelowOne(x []float32) {
	for i, v := range x {
		if v > belowOne {
			x[i] = belowOne
		}
	}
}

// ReadAll reads the rest of the stream into a Clip. On ErrTruncated the
// returned Clip still holds every whole frame before the cut.
func (r *Reader) ReadAll() (Clip, error) {
	return r.readAll(-1)
}

// readAll reads to the end; limit (if ≥ 0) caps the preallocation, for
// callers that know how many bytes can really follow.
func (r *Reader) readAll(limitFrames int64) (Clip, error) {
	const chunk = 1 << 14
	want := r.Frames()
	if limitFrames >= 0 && (want < 0 || want > limitFrames) {
		want = limitFrames
	}
	// Without a bound from the caller, trust a header for at most 1 Mi
	// samples up front; beyond that the slice grows as samples arrive.
	if limitFrames < 0 {
		want = min(want, 1<<20)
	}
	want = max(want, chunk)
	out := make([]float32, 0, want+1)
	for {
		if cap(out)-len(out) < chunk {
			out = append(out[:cap(out)], make([]float32, chunk)...)[:len(out)]
		}
		n, err := r.Read(out[len(out) : len(out)+chunk])
		out = out[:len(out)+n]
		if err == io.EOF {
			return Clip{Samples: out, SampleRate: r.format.SampleRate}, nil
		}
		if err != nil {
			return Clip{Samples: out, SampleRate: r.format.SampleRate}, err
		}
	}
}

// ReadWAV reads a whole WAV stream into a mono Clip.
func ReadWAV(r io.Reader) (Clip, error) {
	rd, err := NewWAVReader(r)
	if err != nil {
		return Clip{}, err
	}
	return rd.readAll(lenHint(r, rd))
}

// lenHint bounds the frames left in r when r knows its length (bytes.Reader,
// strings.Reader), else returns -1.
func lenHint(r io.Reader, rd *Reader) int64 {
	if l, ok := r.(interface{ Len() int }); ok {
		return int64(l.Len()) / int64(rd.format.BlockAlign())
	}
	return -1
}

// ReadRaw reads a whole headerless PCM stream in format f into a mono Clip.
func ReadRaw(r io.Reader, f Format) (Clip, error) {
	rd, err := NewRawReader(r, f)
	if err != nil {
		return Clip{}, err
	}
	return rd.readAll(lenHint(r, rd))
}

// ReadWAVFile reads a WAV file into a mono Clip.
func ReadWAVFile(path string) (Clip, error) {
	return readFile(path, func(f *os.File) (*Reader, error) { return NewWAVReader(f) })
}

// ReadRawFile reads a headerless PCM file in format f into a mono Clip.
func ReadRawFile(path string, format Format) (Clip, error) {
	return readFile(path, func(f *os.File) (*Reader, error) { return NewRawReader(f, format) })
}

func readFile(path string, open func(*os.File) (*Reader, error)) (Clip, error) {
	f, err := os.Open(path)
	if err != nil {
		return Clip{}, fmt.Errorf("audio: %w", err)
	}
	defer f.Close()
	rd, err := open(f)
	if err != nil {
		return Clip{}, fmt.Errorf("%w (file %s)", err, path)
	}
	limit := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		limit = st.Size() / int64(rd.format.BlockAlign())
	}
	c, err := rd.readAll(limit)
	if err != nil {
		return c, fmt.Errorf("%w (file %s)", err, path)
	}
	return c, nil
}

// sampleFeed is the stream go-audio/wav decodes: a canonical header, then
// the caller's sample bytes. Reads of the samples are filled completely
// unless the input ends, because go-audio/wav issues one Read per buffer
// and would mis-decode a short read that splits a sample.
type sampleFeed struct {
	head []byte    // canonical header not yet consumed
	r    io.Reader // the caller's stream, positioned at the samples
	left int64     // sample bytes the header declares still to come; -1 unknown
	n    int64     // sample bytes delivered so far
	err  error     // non-EOF error from r
}

func (s *sampleFeed) Read(p []byte) (int, error) {
	if len(s.head) > 0 {
		n := copy(p, s.head)
		s.head = s.head[n:]
		return n, nil
	}
	if s.left == 0 {
		return 0, io.EOF
	}
	if s.left > 0 && int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := io.ReadFull(s.r, p)
	s.n += int64(n)
	if s.left > 0 {
		s.left -= int64(n)
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.left = 0
		return n, nil
	case errors.Is(err, io.EOF):
		s.left = 0
		return 0, io.EOF
	}
	s.err = err
	return n, err
}

// Seek exists because go-audio/wav asks for an io.ReadSeeker; it seeks only
// for files whose fmt chunk is not first, which the canonical header never is.
func (s *sampleFeed) Seek(int64, int) (int64, error) {
	return 0, errors.New("audio: the sample stream is not seekable")
}

// guard runs a go-audio/wav call, turning a panic into an error so that
// none escapes this package.
func guard(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("audio: go-audio/wav panicked while %s: %v", what, p)
		}
	}()
	if err := f(); err != nil {
		return fmt.Errorf("audio: go-audio/wav failed while %s: %w", what, err)
	}
	return nil
}
