package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
)

// oggFile is an Ogg file split into its pages.
type oggFile struct {
	data  []byte
	pages []oggPage
}

// readOggFixture reads a made fixture and splits it into pages.
func readOggFixture(t testing.TB, name string) oggFile {
	t.Helper()
	b, err := os.ReadFile(testenv.AudioFixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return splitOgg(t, b)
}

func splitOgg(t testing.TB, b []byte) oggFile {
	t.Helper()
	f := oggFile{data: b}
	st := &oggStream{r: bytes.NewReader(b)}
	for {
		p, err := st.readPage()
		if err == io.EOF {
			return f
		}
		if err != nil {
			t.Fatal(err)
		}
		f.pages = append(f.pages, p)
	}
}

// packets returns the packets of f's pages, in order.
func (f oggFile) packets() [][]byte {
	var out [][]byte
	var cur []byte
	for _, p := range f.pages {
		body := p.body
		for _, l := range p.lacing {
			cur = append(cur, body[:l]...)
			body = body[l:]
			if l < 255 {
				out, cur = append(out, cur), nil
			}
		}
	}
	return out
}

// oggCRC is the Ogg page checksum: CRC-32, polynomial 0x04c11db7, not
// reflected, starting at 0.
func oggCRC(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc ^= uint32(c) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// oggPageBytes builds one page with a correct checksum.
func oggPageBytes(flags byte, granule int64, serial, seq uint32, lacing, body []byte) []byte {
	h := make([]byte, 27, 27+len(lacing)+len(body))
	copy(h, "OggS")
	h[5] = flags
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], serial)
	binary.LittleEndian.PutUint32(h[18:], seq)
	h[26] = byte(len(lacing))
	h = append(append(h, lacing...), body...)
	binary.LittleEndian.PutUint32(h[22:], oggCRC(h))
	return h
}

// repage gives p another serial and sequence number, keeping the rest.
func repage(p oggPage, flags byte, serial, seq uint32) []byte {
	granule := int64(binary.LittleEndian.Uint64(p.raw[6:]))
	return oggPageBytes(flags, granule, serial, seq, p.lacing, p.body)
}

// oggPackets lays packets out on pages of serial from sequence number
// seq on, one packet per page or more pages where it needs them, each
// page that ends a packet at granule position granule. Sequence number 0
// begins the stream; eos ends it on the last page.
func oggPackets(serial, seq uint32, granule int64, eos bool, packets ...[]byte) []byte {
	var out []byte
	for i, pk := range packets {
		cont := false
		for {
			n := min(len(pk), 255*255)
			lacing := bytes.Repeat([]byte{255}, n/255)
			more := len(pk) > n || n == 255*255
			if !more {
				lacing = append(lacing, byte(n%255))
			}
			var flags byte
			if seq == 0 {
				flags |= oggBOS
			}
			if cont {
				flags |= oggContinued
			}
			g := granule
			if more {
				g = -1
			}
			if eos && i == len(packets)-1 && !more {
				flags |= oggEOS
			}
			out = append(out, oggPageBytes(flags, g, serial, seq, lacing, pk[:n])...)
			seq++
			pk, cont = pk[n:], true
			if !more {
				break
			}
		}
	}
	return out
}

// TestVorbisCutAtPages: a stream cut at a page boundary (no end-of-stream
// page) or inside a page is truncated, and yields exactly the samples of
// the pages before the cut: the granule position of the last whole page.
func TestVorbisCutAtPages(t *testing.T) {
	f := readOggFixture(t, "jfk-11s.ogg")
	whole, err := Decode(bytes.NewReader(f.data))
	if err != nil {
		t.Fatal(err)
	}
	for k := 3; k < len(f.pages)-1; k += 3 {
		end := f.pages[k+1].offset
		granule := int64(binary.LittleEndian.Uint64(f.pages[k].raw[6:]))
		for _, cut := range []int64{end, end + 1, end + 27, end + int64(len(f.pages[k+1].raw))/2} {
			c, err := Decode(bytes.NewReader(f.data[:cut]))
			if !errors.Is(err, ErrTruncated) || int64(len(c.Samples)) != granule {
				t.Fatalf("cut at byte %d (page %d ends at %d): %d samples, %v; want %d and ErrTruncated", cut, k, end, len(c.Samples), err, granule)
			}
			if !slicesEqual(c.Samples, whole.Samples[:granule]) {
				t.Fatalf("cut at byte %d: the samples differ from the whole file's", cut)
			}
		}
	}
}

// TestVorbisChained: streams joined one after the other are read as one
// if they agree in rate and channels; otherwise, or for another codec, the
// error comes after the first stream's samples. Bytes after the last page
// are ignored.
func TestVorbisChained(t *testing.T) {
	jfk := readOggFixture(t, "jfk-11s.ogg")
	tones := readOggFixture(t, "tones-stereo-44k.ogg")
	opus, err := os.ReadFile(testenv.AudioFixture(t, "jfk-1s.opus"))
	if err != nil {
		t.Fatal(err)
	}
	one, err := Decode(bytes.NewReader(jfk.data))
	if err != nil {
		t.Fatal(err)
	}
	n := len(one.Samples)
	for _, c := range []struct {
		name    string
		in      []byte
		samples int
		err     error
		msg     string
	}{
		{"twice", append(bytes.Clone(jfk.data), jfk.data...), 2 * n, nil, ""},
		{"trailing bytes", append(bytes.Clone(jfk.data), "TAG junk"...), n, nil, ""},
		{"other rate", append(bytes.Clone(jfk.data), tones.data...), n, ErrUnsupportedCodec, "changes from 16000 Hz × 1 to 44100 Hz × 2"},
		{"then opus", append(bytes.Clone(jfk.data), opus...), n, ErrUnsupportedCodec, "a chained Ogg/Opus stream follows"},
		{"then a cut stream", append(bytes.Clone(jfk.data), jfk.data[:5000]...), n, ErrTruncated, fmt.Sprintf("inside the Ogg page at byte %d", len(jfk.data)+int(jfk.pages[2].offset))},
	} {
		got, err := Decode(bytes.NewReader(c.in))
		if c.err == nil && err != nil || c.err != nil && (!errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg)) {
			t.Fatalf("%s: %v, want %v containing %q", c.name, err, c.err, c.msg)
		}
		if len(got.Samples) != c.samples || !slicesEqual(got.Samples[:n], one.Samples) || c.samples == 2*n && !slicesEqual(got.Samples[n:], one.Samples) {
			t.Fatalf("%s: %d samples, want %d (the single stream's, repeated)", c.name, len(got.Samples), c.samples)
		}
	}
}

// TestVorbisMultiplexed: pages of another logical stream interleaved with
// the Vorbis stream's are skipped.
func TestVorbisMultiplexed(t *testing.T) {
	jfk := readOggFixture(t, "jfk-11s.ogg")
	other := readOggFixture(t, "tones-stereo-44k.ogg")
	want, err := Decode(bytes.NewReader(jfk.data))
	if err != nil {
		t.Fatal(err)
	}
	// The other stream gets serial 2; its beginning page follows the
	// Vorbis stream's, as the spec groups them, and its other pages come
	// between the Vorbis stream's.
	var mux []byte
	for i, p := range jfk.pages {
		mux = append(mux, p.raw...)
		if i < len(other.pages) {
			mux = append(mux, repage(other.pages[i], other.pages[i].flags, 2, uint32(i))...)
		}
	}
	got, err := Decode(bytes.NewReader(mux))
	if err != nil || !slicesEqual(got.Samples, want.Samples) {
		t.Fatalf("%d samples (%v); want the %d of the stream alone", len(got.Samples), err, len(want.Samples))
	}
	// A page missing from the Vorbis stream is found by its sequence
	// number.
	var gap []byte
	for i, p := range jfk.pages {
		if i != 5 {
			gap = append(gap, p.raw...)
		}
	}
	if _, err := Decode(bytes.NewReader(gap)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "page 6 of the Vorbis stream follows page 4") {
		t.Fatalf("page 5 left out: %v", err)
	}
}

// bitWriter packs bits least significant first, as Vorbis headers do.
type bitWriter struct {
	b []byte
	n int
}

func (w *bitWriter) put(v uint64, bits int) *bitWriter {
	for i := range bits {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		if v>>i&1 != 0 {
			w.b[w.n/8] |= 1 << (w.n % 8)
		}
		w.n++
	}
	return w
}

// codebook writes a codebook of the given entries, all of codeword
// length bits, dims dimensions, no lookup table.
func (w *bitWriter) codebook(dims, entries uint64, bits int) *bitWriter {
	w.put(0x564342, 24).put(dims, 16).put(entries, 24).put(0, 1).put(0, 1)
	for range entries {
		w.put(uint64(bits-1), 5)
	}
	return w.put(0, 4)
}

// setupPacket is a setup header of the bits w holds.
func setupPacket(w *bitWriter) []byte { return append([]byte("\x05vorbis"), w.b...) }

// TestVorbisHeaders: headers that would make the decoder loop forever,
// overflow its stack or allocate gigabytes, or that it misreads, are
// refused by name before it sees them; so is a packet that grows past
// maxOggPacket.
func TestVorbisHeaders(t *testing.T) {
	f := readOggFixture(t, "jfk-11s.ogg")
	pk := f.packets()
	ident, comment, setup := pk[0], pk[1], pk[2]
	withIdent := func(off int, b ...byte) []byte {
		id := bytes.Clone(ident)
		copy(id[off:], b)
		return id
	}
	withSetupBits := func(bit int, v uint64, n int) []byte {
		s := bytes.Clone(setup)
		for i := range n {
			p := 8*7 + bit + i
			s[p/8] = s[p/8]&^(1<<(p%8)) | byte(v>>i&1)<<(p%8)
		}
		return s
	}
	// A valid codebook (two entries of one bit), then one or more
	// codebooks under test.
	books := func(n uint64) *bitWriter { return new(bitWriter).put(n-1, 8).codebook(1, 2, 1) }
	// A sparse codebook in which no entry is used.
	unused := books(2).put(0x564342, 24).put(1, 16).put(4, 24).put(0, 1).put(1, 1).put(0, 4).put(0, 4)
	// An ordered codebook: lengths 1, 2, ... of which the last runs
	// past 32 bits.
	long := books(2).put(0x564342, 24).put(1, 16).put(1<<19, 24).put(1, 1).put(0, 5)
	for range 33 {
		long.put(0, bitLen(1<<19))
	}
	// Two ordered codebooks of 2^20 entries of 20 bits (full trees): the
	// second exceeds the budget.
	big := new(bitWriter).put(1, 8)
	for range 2 {
		big.put(0x564342, 24).put(1, 16).put(1<<20, 24).put(1, 1).put(19, 5).put(1<<20, 21).put(0, 4)
	}
	// A setup whose codebooks are fine and whose only floor is of type 1
	// with no partitions, as libvorbis writes for an LFE channel.
	lfe := books(1).put(0, 6).put(0, 16).put(0, 6).put(1, 16).put(0, 5).put(0, 2).put(8, 4).put(0, 32)
	for _, c := range []struct {
		name                  string
		ident, comment, setup []byte
		err                   error
		msg                   string
	}{
		{"0 channels", withIdent(11, 0), comment, setup, ErrNoChannels, "Ogg/Vorbis"},
		{"500 Hz", withIdent(12, 0xf4, 1, 0, 0), comment, setup, ErrSampleRate, "declares 500 Hz"},
		{"block sizes 2^5", withIdent(28, 0x55), comment, setup, ErrBadHeader, "block sizes 2^5 and 2^5"},
		{"long block shorter", withIdent(28, 0x9b), comment, setup, ErrBadHeader, "block sizes 2^11 and 2^9"},
		{"no framing bit", withIdent(29, 0), comment, setup, ErrBadHeader, "framing bit"},
		{"version 1", withIdent(7, 1), comment, setup, ErrBadHeader, "version 1"},
		{"short identification", ident[:20], comment, setup, ErrBadHeader, "not a 30-byte identification header"},
		{"no comment header", ident, setup, setup, ErrBadHeader, "not a comment header"},
		{"no setup header", ident, comment, comment, ErrBadHeader, "not a setup header"},
		{"codebook of 0 dimensions", ident, comment, withSetupBits(8+24, 0, 16), ErrBadHeader, "codebook 0 of 35: 0 dimensions"},
		{"codebook of 0 entries", ident, comment, withSetupBits(8+40, 0, 24), ErrBadHeader, "an entry count of 0"},
		{"codebook of 1 entry", ident, comment, withSetupBits(8+40, 1, 24), ErrBadHeader, "an entry count of 1"},
		{"codebook of 2^24 values", ident, comment, withSetupBits(8+40, 1<<23, 24), ErrBadHeader, "libvorbis's limit"},
		{"no sync", ident, comment, withSetupBits(8, 0x564343, 24), ErrBadHeader, "sync pattern 564343"},
		{"setup cut", ident, comment, setup[:40], ErrBadHeader, "the header ends inside it"},
		{"no codewords", ident, comment, setupPacket(unused), ErrBadHeader, "codebook 1 of 2: no entry has a codeword"},
		{"codewords of 33 bits", ident, comment, setupPacket(long), ErrBadHeader, "beyond 32 bits"},
		{"over the budget", ident, comment, setupPacket(big), ErrBadHeader, "codebook 1 of 2: 1048576 entries: more than 1048576 in all"},
		{"floor of no partitions", ident, comment, setupPacket(lfe), ErrUnsupportedCodec, "floor 0 has no partitions"},
		{"comment of 17 MiB", ident, append([]byte("\x03vorbis"), make([]byte, 17<<20)...), setup, ErrTooLarge, "an Ogg packet of more than 16 MiB"},
	} {
		in := append(oggPackets(7, 0, 0, false, c.ident), oggPackets(7, 1, 0, true, c.comment, c.setup)...)
		_, err := Decode(bytes.NewReader(in))
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want %v containing %q", c.name, err, c.err, c.msg)
		}
	}
	// The headers as they are, laid out the same way, hold no audio.
	in := append(oggPackets(7, 0, 0, false, ident), oggPackets(7, 1, 0, true, comment, setup)...)
	if c, err := Decode(bytes.NewReader(in)); err != nil || len(c.Samples) != 0 {
		t.Errorf("the fixture's headers alone: %d samples, %v", len(c.Samples), err)
	}
}

// TestOggOpusNamed: an Opus file made by opusenc is refused, saying why.
func TestOggOpusNamed(t *testing.T) {
	b, err := os.ReadFile(testenv.AudioFixture(t, "jfk-1s.opus"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Decode(bytes.NewReader(b))
	if !errors.Is(err, ErrUnsupportedCodec) || !strings.Contains(err.Error(), "Ogg/Opus is not supported: no pure-Go Opus decoder is built in") {
		t.Fatalf("%v", err)
	}
}
