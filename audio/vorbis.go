package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/jfreymuth/oggvorbis"
)

// Ogg/Vorbis decodes through github.com/jfreymuth/oggvorbis (packets out of
// pages, the granule positions that trim the first and last packets) and
// github.com/jfreymuth/vorbis (the codec). Neither can be handed untrusted
// bytes as they are, so every page passes through oggStream first:
//
//   - oggvorbis ignores serial numbers and takes the end of input at a page
//     boundary for the end of the stream; oggStream keeps the pages of the
//     Vorbis stream alone, checks their sequence, and tells a stream cut
//     short (no end-of-stream page) from a finished one.
//   - vorbis trusts the headers: with zero channels every packet decodes
//     to nothing and oggvorbis recurses once per packet looking for
//     samples (a long stream overflows the stack, which no recover
//     catches); a codebook with no codewords, or of zero dimensions, loops
//     forever in the first packet that uses it; codebook sizes drive
//     allocations of up to 16 GB; an ordered codebook whose lengths run out
//     never ends. The three
//     header packets are assembled and checked here (the identification
//     header's layout and limits, the setup header's codebooks, with
//     libvorbis's own limits and a budget far above what any encoder
//     writes) before the decoder sees them.
//
// Samples arrive as float32 and stay float32: they travel to the Reader as
// their bit patterns, the way float WAV data does (Format.Encoding is
// Float32), so no rounding to an integer width is added to the codec's.

// The codebook budget of one stream's setup header. libvorbis writes
// 16–49 codebooks with 2,857–19,413 entries and 7,651–85,928 vector values
// in all (oggenc 1.4.2, qualities -1 to 10, mono to 5.1, 8–48 kHz); these
// limits are 50 times more, and cap what a forged header can make the
// decoder allocate for its codebooks at about 40 MB.
const (
	maxVorbisBookEntries = 1 << 20
	maxVorbisBookValues  = 1 << 22
)

// maxOggPacket bounds one packet: oggvorbis joins a packet's pieces from
// as many pages as it spans, so without a bound a stream of pages that
// never end their packet grows in memory as long as it goes on. Audio
// packets are a few kB; the largest packet in use is a comment header
// holding cover art, rarely more than a few MB.
const maxOggPacket = 16 << 20

// Ogg page header flags.
const (
	oggContinued = 1 // the first packet continues one from the previous page
	oggBOS       = 2 // beginning of a logical stream
	oggEOS       = 4 // end of a logical stream
)

// oggPage is one page as read.
type oggPage struct {
	flags  byte
	serial uint32
	seq    uint32
	lacing []byte // segment sizes
	body   []byte
	raw    []byte // the whole page: header, lacing, body
	offset int64  // where it starts in the input
}

// firstPacket returns the start of the first packet that begins on p, at
// most n bytes of it.
func (p oggPage) firstPacket(n int) []byte {
	if p.flags&oggContinued != 0 {
		return nil
	}
	return p.body[:min(n, len(p.body))]
}

// errNotOggPage: the bytes where a page should begin do not start with
// "OggS".
var errNotOggPage = errors.New("not an Ogg page")

// oggStream reads the pages of one logical Vorbis stream, and serves them
// whole, as bytes, to oggvorbis. Pages of other logical streams
// multiplexed with it are skipped. Its errors wrap the package's errors;
// oggvorbis passes them on unchanged.
type oggStream struct {
	r       io.Reader
	offset  int64  // bytes read from r
	serial  uint32 // of the Vorbis stream
	seq     uint32 // sequence number of the last page served
	eos     bool   // the end-of-stream page has been served
	open    int    // bytes of the packet the last page left unfinished
	pending []byte // page bytes oggvorbis has not read yet
	err     error  // sticky
}

// errLinkEnd is what oggStream answers after the end-of-stream page: the
// Vorbis stream is over, though the input may go on with another one.
var errLinkEnd = errors.New("end of the Ogg logical stream")

// Read implements io.Reader for oggvorbis.
func (s *oggStream) Read(b []byte) (int, error) {
	if len(s.pending) == 0 {
		if s.eos {
			return 0, errLinkEnd
		}
		p, err := s.next()
		if err != nil {
			return 0, err
		}
		s.pending = p.raw
	}
	n := copy(b, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// next returns the next page of the Vorbis stream.
func (s *oggStream) next() (oggPage, error) {
	if s.err != nil {
		return oggPage{}, s.err
	}
	for {
		p, err := s.readPage()
		switch {
		case errors.Is(err, io.EOF):
			s.err = fmt.Errorf("audio: %w: the Ogg/Vorbis stream ends after its page %d (byte %d) without an end-of-stream page", ErrTruncated, s.seq, s.offset)
		case errors.Is(err, errNotOggPage):
			s.err = fmt.Errorf("audio: %w: the Ogg/Vorbis stream has no page at byte %d: %w", ErrCorrupt, p.offset, err)
		case err != nil:
			s.err = err
		case p.serial != s.serial:
			continue // another logical stream
		case p.seq != s.seq+1:
			s.err = fmt.Errorf("audio: %w: Ogg page %d of the Vorbis stream follows page %d (byte %d): pages are missing", ErrCorrupt, p.seq, s.seq, p.offset)
		}
		if s.err == nil {
			s.err = s.follow(p)
		}
		if s.err != nil {
			return oggPage{}, s.err
		}
		return p, nil
	}
}

// follow takes p as the stream's latest page, refusing a packet that grows
// past maxOggPacket.
func (s *oggStream) follow(p oggPage) error {
	s.seq, s.eos = p.seq, p.flags&oggEOS != 0
	tail, i := 0, len(p.lacing)
	for i > 0 && p.lacing[i-1] == 255 {
		tail += 255
		i--
	}
	if i == 0 {
		// No packet ends here: oggvorbis adds the page to the open packet
		// (whatever the continued flag says).
		s.open += tail
	} else {
		s.open = tail
	}
	if s.open > maxOggPacket {
		return fmt.Errorf("audio: %w: an Ogg packet of more than %d MiB (page %d, byte %d)", ErrTooLarge, maxOggPacket>>20, p.seq, p.offset)
	}
	return nil
}

// readPage reads the page at the current position, of any logical stream.
// At a clean end of input it returns io.EOF; where the bytes are not a
// page, an error wrapping errNotOggPage.
func (s *oggStream) readPage() (oggPage, error) {
	p := oggPage{offset: s.offset}
	var head [27 + 255]byte
	n, err := io.ReadFull(s.r, head[:27])
	s.offset += int64(n)
	if !bytes.HasPrefix(head[:n], []byte("OggS")[:min(n, 4)]) {
		return p, fmt.Errorf("%w (%s)", errNotOggPage, describeMagic(head[:min(n, 4)]))
	}
	if err != nil {
		return p, s.readErr(p, err)
	}
	if head[4] != 0 {
		return p, fmt.Errorf("audio: %w: the Ogg page at byte %d has structure version %d, not 0", ErrCorrupt, p.offset, head[4])
	}
	segs := int(head[26])
	n, err = io.ReadFull(s.r, head[27:27+segs])
	s.offset += int64(n)
	if err != nil {
		return p, s.readErr(p, noEOF(err))
	}
	size := 0
	for _, l := range head[27 : 27+segs] {
		size += int(l)
	}
	p.raw = make([]byte, 27+segs+size)
	copy(p.raw, head[:27+segs])
	n, err = io.ReadFull(s.r, p.raw[27+segs:])
	s.offset += int64(n)
	if err != nil {
		return p, s.readErr(p, noEOF(err))
	}
	p.lacing, p.body = p.raw[27:27+segs], p.raw[27+segs:]
	p.flags = head[5]
	p.serial = binary.LittleEndian.Uint32(head[14:])
	p.seq = binary.LittleEndian.Uint32(head[18:])
	return p, nil
}

// readErr names a failed read of the page p.
func (s *oggStream) readErr(p oggPage, err error) error {
	switch {
	case errors.Is(err, io.EOF):
		return io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("audio: %w: input ends inside the Ogg page at byte %d", ErrTruncated, p.offset)
	}
	return fmt.Errorf("audio: reading the Ogg page at byte %d: %w", p.offset, err)
}

// noEOF: the end of input after a page's first bytes is a cut.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// vorbisSource decodes an Ogg/Vorbis stream, and the Vorbis streams
// chained after it (each starting where the one before ended, as when
// files are concatenated or a radio stream is recorded) if they share its
// rate and channels.
type vorbisSource struct {
	st     *oggStream
	dec    *oggvorbis.Reader // nil between two chained streams
	format Format
	buf    []float32
	done   error // how the input ended, once it has
}

// newVorbisSource reads and checks the headers of the Vorbis stream that r
// begins with.
func newVorbisSource(r io.Reader) (*vorbisSource, Format, error) {
	s := &vorbisSource{st: &oggStream{r: r}}
	p, err := s.st.readPage()
	switch {
	case errors.Is(err, io.EOF):
		return nil, Format{}, fmt.Errorf("audio: %w: empty Ogg input", ErrTruncated)
	case errors.Is(err, errNotOggPage):
		return nil, Format{}, fmt.Errorf("audio: %w: Ogg/Vorbis: %w", ErrBadHeader, err)
	case err != nil:
		return nil, Format{}, err
	}
	if err := s.startLink(p); err != nil {
		return nil, Format{}, err
	}
	return s, s.format, nil
}

// startLink reads the header packets of the Vorbis stream whose first page
// is p, checks them, and starts oggvorbis on the stream.
func (s *vorbisSource) startLink(p oggPage) error {
	if p.flags&oggBOS == 0 || p.flags&oggContinued != 0 {
		return fmt.Errorf("audio: %w: the Ogg page at byte %d does not begin a logical stream", ErrBadHeader, p.offset)
	}
	st := s.st
	st.serial, st.pending, st.open = p.serial, nil, 0
	if err := st.follow(p); err != nil {
		return err
	}
	// The three header packets, assembled from the pages as oggvorbis will
	// assemble them; the pages are kept for it to read again.
	var packets [][]byte
	var cur []byte
	for {
		st.pending = append(st.pending, p.raw...)
		body := p.body
		for _, l := range p.lacing {
			cur = append(cur, body[:l]...)
			body = body[l:]
			if l < 255 {
				packets, cur = append(packets, cur), nil
			}
		}
		if len(packets) >= 3 {
			break
		}
		if st.eos {
			return fmt.Errorf("audio: %w: the Ogg/Vorbis stream at byte %d ends inside its three header packets", ErrBadHeader, p.offset)
		}
		var err error
		if p, err = st.next(); err != nil {
			return err
		}
	}
	f, block, err := checkVorbisIdent(packets[0])
	if err != nil {
		return err
	}
	if len(packets[1]) < 7 || string(packets[1][:7]) != "\x03vorbis" {
		return fmt.Errorf("audio: %w: the second Vorbis packet is not a comment header", ErrBadHeader)
	}
	if err := checkVorbisSetup(packets[2]); err != nil {
		return err
	}
	if s.format.SampleRate == 0 {
		s.format = f
	} else if f != s.format {
		return fmt.Errorf("audio: %w: a chained Ogg/Vorbis stream changes from %d Hz × %d to %d Hz × %d channels (byte %d)",
			ErrUnsupportedCodec, s.format.SampleRate, s.format.Channels, f.SampleRate, f.Channels, p.offset)
	}
	// One long block's samples: oggvorbis then decodes straight into buf.
	if n := block / 2 * f.Channels; len(s.buf) < n {
		s.buf = make([]float32, n)
	}
	err = safely("jfreymuth/oggvorbis", func() error {
		var err error
		s.dec, err = oggvorbis.NewReader(st)
		return err
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errLinkEnd):
		s.dec = nil // headers and no audio
		return nil
	case st.err != nil && errors.Is(err, st.err), errors.Is(err, ErrCorrupt):
		return err
	}
	return fmt.Errorf("audio: %w: Ogg/Vorbis headers or first packets: %w", ErrBadHeader, err)
}

// next implements codecSource.
func (s *vorbisSource) next(dst []int) ([]int, error) {
	ch := s.format.Channels
	for len(dst) == 0 && s.done == nil {
		if s.dec == nil {
			s.done = s.nextLink()
			continue
		}
		var n int
		err := safely("jfreymuth/oggvorbis", func() error {
			var err error
			n, err = s.dec.Read(s.buf)
			return err
		})
		n -= n % ch
		for i, v := range s.buf[:n] {
			if v != v {
				n = i - i%ch
				err = fmt.Errorf("audio: %w: Ogg/Vorbis page %d decodes to NaN", ErrCorrupt, s.st.seq)
				break
			}
		}
		for _, v := range s.buf[:n] {
			dst = append(dst, int(math.Float32bits(v)))
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, errLinkEnd):
			s.dec = nil
		case s.st.err != nil && errors.Is(err, s.st.err), errors.Is(err, ErrCorrupt):
			s.done = err
		default:
			s.done = fmt.Errorf("audio: %w: Ogg/Vorbis page %d: %w", ErrCorrupt, s.st.seq, err)
		}
	}
	if s.done != nil {
		return dst, s.done
	}
	return dst, nil
}

// nextLink starts the next chained stream after an end-of-stream page,
// returning io.EOF when the input ends there. Bytes after the last page
// that are not a page (a tag some tools append) are ignored, as MP3's are.
func (s *vorbisSource) nextLink() error {
	for {
		p, err := s.st.readPage()
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, errNotOggPage):
			return io.EOF
		case err != nil:
			return err
		case p.flags&oggBOS == 0 && p.serial == s.st.serial:
			return fmt.Errorf("audio: %w: an Ogg page of the Vorbis stream at byte %d follows its end-of-stream page", ErrCorrupt, p.offset)
		case p.flags&oggBOS == 0:
			continue // the end of a stream multiplexed with the last one
		}
		// A new stream (files joined with cat may even share a serial
		// number, which the spec forbids but costs nothing to accept).
		if c, _ := sniffOggPacket(p.firstPacket(16)); c != OggVorbis {
			return fmt.Errorf("audio: %w: a chained %s stream follows the Ogg/Vorbis one at byte %d", ErrUnsupportedCodec, c, p.offset)
		}
		return s.startLink(p)
	}
}

// checkVorbisIdent checks the identification header and returns the
// stream's layout and long block size.
func checkVorbisIdent(h []byte) (Format, int, error) {
	if len(h) < 30 || string(h[:7]) != "\x01vorbis" {
		return Format{}, 0, fmt.Errorf("audio: %w: the first Vorbis packet is not a %d-byte identification header (%d bytes)", ErrBadHeader, 30, len(h))
	}
	version := binary.LittleEndian.Uint32(h[7:])
	channels := int(h[11])
	rate := binary.LittleEndian.Uint32(h[12:])
	short, long := int(h[28]&15), int(h[28]>>4)
	switch {
	case version != 0:
		return Format{}, 0, fmt.Errorf("audio: %w: Vorbis version %d (only 0 exists)", ErrBadHeader, version)
	case channels == 0:
		return Format{}, 0, fmt.Errorf("audio: Ogg/Vorbis: %w", ErrNoChannels)
	case rate < MinSampleRate || rate > MaxSampleRate:
		return Format{}, 0, fmt.Errorf("audio: %w: the Vorbis header declares %d Hz (want %d..%d)", ErrSampleRate, rate, MinSampleRate, MaxSampleRate)
	case short < 6 || long > 13 || short > long:
		return Format{}, 0, fmt.Errorf("audio: %w: Vorbis block sizes 2^%d and 2^%d (want 2^6 ≤ short ≤ long ≤ 2^13)", ErrBadHeader, short, long)
	case h[29]&1 == 0:
		return Format{}, 0, fmt.Errorf("audio: %w: the Vorbis identification header lacks its framing bit", ErrBadHeader)
	}
	return Format{SampleRate: int(rate), Channels: channels, Encoding: Float32}, 1 << long, nil
}

// checkVorbisSetup checks the codebooks of the setup header (the part of
// it that sizes what the decoder allocates and where its loops end).
func checkVorbisSetup(h []byte) error {
	if len(h) < 7 || string(h[:7]) != "\x05vorbis" {
		return fmt.Errorf("audio: %w: the third Vorbis packet is not a setup header", ErrBadHeader)
	}
	r := &vorbisBits{b: h[7:]}
	n, ok := r.read(8)
	if !ok {
		return fmt.Errorf("audio: %w: the Vorbis setup header is empty", ErrBadHeader)
	}
	budget := vorbisBudget{entries: maxVorbisBookEntries, values: maxVorbisBookValues}
	for i := range int(n) + 1 {
		if err := budget.checkCodebook(r); err != nil {
			return fmt.Errorf("audio: %w: Vorbis setup header, codebook %d of %d: %w", ErrBadHeader, i, n+1, err)
		}
	}
	return checkVorbisFloors(r)
}

// checkVorbisFloors reads the time-domain transforms and floors that
// follow the codebooks, to refuse by name a floor that
// github.com/jfreymuth/vorbis v1.0.2 misreads: a type 1 floor of no
// partitions (libvorbis gives one to the LFE channel of 5.1 audio). The
// decoder then reads one class too many, and every field after it from
// the wrong bit.
func checkVorbisFloors(r *vorbisBits) error {
	transforms, _ := r.read(6)
	for range transforms + 1 {
		if t, ok := r.read(16); !ok || t != 0 {
			return fmt.Errorf("audio: %w: Vorbis setup header: time-domain transform type %d (only 0 exists)", ErrBadHeader, t)
		}
	}
	floors, _ := r.read(6)
	for i := range floors + 1 {
		kind, _ := r.read(16)
		switch kind {
		case 0:
			r.skip(8 + 16 + 16 + 6 + 8) // order, rate, bark map size, amplitude bits and offset
			books, _ := r.read(4)
			r.skip(8 * int(books+1))
		case 1:
			parts, _ := r.read(5)
			if parts == 0 {
				return fmt.Errorf("audio: %w: Ogg/Vorbis whose floor %d has no partitions (libvorbis writes one for the LFE channel of 5.1 audio) is not supported: github.com/jfreymuth/vorbis v1.0.2 misreads the setup header that holds it; %s",
					ErrUnsupportedCodec, i, readFormats)
			}
			classes := make([]uint32, parts)
			top := uint32(0)
			for j := range classes {
				classes[j], _ = r.read(4)
				top = max(top, classes[j])
			}
			dims := make([]int, top+1)
			for c := range dims {
				d, _ := r.read(3)
				dims[c] = int(d) + 1
				sub, _ := r.read(2)
				if sub != 0 {
					r.skip(8) // master book
				}
				r.skip(8 << sub) // subclass books
			}
			r.skip(2) // multiplier
			bits, _ := r.read(4)
			for _, c := range classes {
				r.skip(dims[c] * int(bits))
			}
		default:
			return fmt.Errorf("audio: %w: Vorbis setup header: floor %d has type %d (0 or 1 exist)", ErrBadHeader, i, kind)
		}
		if r.pos >= 8*len(r.b) {
			return fmt.Errorf("audio: %w: Vorbis setup header ends inside floor %d", ErrBadHeader, i)
		}
	}
	return nil
}

// vorbisBudget is what is left of the codebook budget.
type vorbisBudget struct{ entries, values int }

// errShortSetup: a codebook runs past the end of the setup header.
var errShortSetup = errors.New("the header ends inside it")

// checkCodebook reads one codebook as the decoder will, refusing what
// libvorbis refuses and what would exceed the budget.
func (b *vorbisBudget) checkCodebook(r *vorbisBits) error {
	sync, _ := r.read(24)
	dims, _ := r.read(16)
	entries, ok := r.read(24)
	switch {
	case !ok:
		return errShortSetup
	case sync != 0x564342:
		return fmt.Errorf("sync pattern %06x, not 564342", sync)
	case dims == 0:
		return errors.New("0 dimensions")
	case entries < 2:
		// vorbis sizes its Huffman tree 2·entries − 2, which is no room
		// for one entry and 16 GB for none.
		return fmt.Errorf("an entry count of %d (github.com/jfreymuth/vorbis decodes 2 or more)", entries)
	case bitLen(dims)+bitLen(entries) > 24:
		return fmt.Errorf("%d entries of %d dimensions (libvorbis's limit: 2^24 values)", entries, dims)
	case int(entries) > b.entries:
		return fmt.Errorf("%d entries: more than %d in all", entries, maxVorbisBookEntries)
	}
	b.entries -= int(entries)
	used := uint32(0)
	if ordered, _ := r.read(1); ordered == 0 {
		sparse, _ := r.read(1)
		for range entries {
			if sparse == 1 {
				if f, _ := r.read(1); f == 0 {
					continue
				}
			}
			used++
			r.read(5) // a codeword length of 1 to 32 bits
		}
	} else {
		length, _ := r.read(5)
		length++
		for cur := uint32(0); cur < entries; length++ {
			num, ok := r.read(bitLen(entries - cur))
			switch {
			case !ok:
				return errShortSetup
			case length > 32:
				return errors.New("codeword lengths beyond 32 bits")
			case num > entries-cur:
				return fmt.Errorf("ordered lengths for %d entries, not %d", cur+num, entries)
			}
			cur += num
			used += num
		}
	}
	lookup, ok := r.read(4)
	switch {
	case !ok:
		return errShortSetup
	case used == 0:
		// Reading a codeword from it would never end.
		return errors.New("no entry has a codeword")
	case lookup == 0:
		return nil
	case lookup > 2:
		return fmt.Errorf("lookup type %d", lookup)
	}
	r.read(32) // minimum value
	r.read(32) // delta
	bits, _ := r.read(4)
	bits++
	if _, ok := r.read(1); !ok {
		return errShortSetup
	}
	values := int(entries) * int(dims) // < 2^24, checked above
	if values > b.values {
		return fmt.Errorf("%d vector values: more than %d in all", values, maxVorbisBookValues)
	}
	b.values -= values
	// The count of multiplicands, computed as the decoder computes it, so
	// that the next codebook is read where it will read it.
	mult := values
	if lookup == 1 {
		mult = int(math.Floor(math.Pow(float64(entries), 1/float64(dims))))
	}
	if !r.skip(mult * int(bits)) {
		return errShortSetup
	}
	return nil
}

// bitLen is the Vorbis spec's ilog: the bits needed to write x.
func bitLen(x uint32) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// vorbisBits reads a Vorbis header's bits, least significant first.
type vorbisBits struct {
	b   []byte
	pos int // in bits
}

// read returns the next n ≤ 32 bits; ok is false (and the reader at its
// end) if fewer are left.
func (r *vorbisBits) read(n int) (v uint32, ok bool) {
	if !r.skip(n) {
		return 0, false
	}
	for i, p := 0, r.pos-n; i < n; i, p = i+1, p+1 {
		v |= uint32(r.b[p>>3]>>(p&7)&1) << i
	}
	return v, true
}

// skip passes over n bits.
func (r *vorbisBits) skip(n int) bool {
	if n > 8*len(r.b)-r.pos {
		r.pos = 8 * len(r.b)
		return false
	}
	r.pos += n
	return true
}
