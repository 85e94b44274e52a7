package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// WAV format tags (wFormatTag) this package knows by name.
const (
	tagPCM        = 0x0001
	tagFloat      = 0x0003
	tagExtensible = 0xFFFE
)

// unknownSize is the data-chunk length that ffmpeg puts in a header it
// cannot go back and patch.
const unknownSize = 0xFFFFFFFF

// streamSize is the data-chunk length that sox puts in a header it cannot
// patch (its MS_UNSPEC), and so does this package's Writer: sox and soxi
// read it as "length unknown" (soxi shows no duration, where 0xFFFFFFFF
// shows 24 h and sox warns of a premature end), while ffmpeg and Python's
// wave module read either to the end of the input. Readers here take
// both as unknown.
const streamSize = 0x7FFFF000

// maxFmtChunk bounds the fmt chunk: real ones are 16, 18 or 40 bytes.
const maxFmtChunk = 4096

// ksDataFormatSuffix is the tail shared by the KSDATAFORMAT_SUBTYPE_* GUIDs of
// WAVE_FORMAT_EXTENSIBLE; the first two bytes hold the plain format tag.
var ksDataFormatSuffix = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// codecNames names compressed WAV codecs in error messages.
var codecNames = map[uint16]string{
	0x0002: "Microsoft ADPCM",
	0x0006: "A-law",
	0x0007: "µ-law",
	0x0011: "IMA ADPCM",
	0x0031: "GSM 6.10",
	0x0050: "MPEG audio",
	0x0055: "MP3",
	0x0161: "WMA",
	0x00FF: "AAC",
	0x2000: "AC-3",
	0x6750: "Vorbis",
	0xF1AC: "FLAC",
}

// wavInfo is what the validated header of a WAV stream says.
type wavInfo struct {
	format    Format
	dataBytes int64 // length of the data chunk, or -1 when the writer did not know it
}

// parseWAVHeader reads r up to the first byte of sample data and validates
// everything go-audio/wav would otherwise trust.
func parseWAVHeader(r io.Reader) (wavInfo, error) {
	var riff [12]byte
	n, err := io.ReadFull(r, riff[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return wavInfo{}, fmt.Errorf("audio: reading WAV header: %w", err)
	}
	if err := checkMagic(riff[:n]); err != nil {
		return wavInfo{}, err
	}
	if n < len(riff) {
		return wavInfo{}, fmt.Errorf("audio: %w: input ends after %d bytes, inside the RIFF header", ErrTruncated, n)
	}

	var (
		info    wavInfo
		haveFmt bool
		hdr     [8]byte
		offset  = int64(len(riff))
	)
	for {
		n, err := io.ReadFull(r, hdr[:])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				if !haveFmt {
					return wavInfo{}, fmt.Errorf("audio: %w: input ends at byte %d without a fmt chunk", ErrTruncated, offset+int64(n))
				}
				return wavInfo{}, fmt.Errorf("audio: %w: input ends at byte %d without a data chunk", ErrTruncated, offset+int64(n))
			}
			return wavInfo{}, fmt.Errorf("audio: reading WAV chunk header: %w", err)
		}
		id := string(hdr[:4])
		size := binary.LittleEndian.Uint32(hdr[4:])
		offset += 8
		switch id {
		case "fmt ":
			if haveFmt {
				return wavInfo{}, fmt.Errorf("audio: %w: second fmt chunk at byte %d", ErrBadHeader, offset-8)
			}
			if size < 16 {
				return wavInfo{}, fmt.Errorf("audio: %w: fmt chunk is %d bytes, want at least 16", ErrBadHeader, size)
			}
			if size > maxFmtChunk {
				return wavInfo{}, fmt.Errorf("audio: %w: fmt chunk of %d bytes (at most %d)", ErrTooLarge, size, maxFmtChunk)
			}
			body := make([]byte, size+size&1)
			if n, err := io.ReadFull(r, body); err != nil {
				if size&1 == 1 && n == int(size) {
					// A missing pad byte after the last header chunk is a
					// writer bug, not a truncation; the data chunk is still
					// to come, so the next read fails clearly if it is absent.
					body = body[:size]
				} else {
					return wavInfo{}, truncatedChunk("fmt", size, n, err)
				}
			}
			offset += int64(len(body))
			f, err := parseFmt(body[:size])
			if err != nil {
				return wavInfo{}, err
			}
			info.format = f
			haveFmt = true
		case "data":
			if !haveFmt {
				return wavInfo{}, fmt.Errorf("audio: %w: data chunk at byte %d comes before the fmt chunk", ErrBadHeader, offset-8)
			}
			info.dataBytes = int64(size)
			if size == unknownSize || size == streamSize {
				info.dataBytes = -1
			}
			return info, nil
		default:
			// LIST, fact, bext, JUNK, ...: metadata we skip without
			// buffering, so a bogus size costs nothing but a short read.
			skip := int64(size) + int64(size&1)
			got, err := io.CopyN(io.Discard, r, skip)
			if err != nil {
				if errors.Is(err, io.EOF) {
					return wavInfo{}, fmt.Errorf("audio: %w: %q chunk at byte %d declares %d bytes, input ends after %d", ErrTruncated, printableID(hdr[:4]), offset-8, size, got)
				}
				return wavInfo{}, fmt.Errorf("audio: skipping %q chunk: %w", printableID(hdr[:4]), err)
			}
			offset += skip
		}
	}
}

// checkMagic classifies the first (up to 12) bytes of a would-be WAV file.
func checkMagic(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("audio: %w: empty input", ErrTruncated)
	}
	want := []byte("RIFF????WAVE")
	for i, c := range b {
		if want[i] != '?' && c != want[i] {
			switch {
			case len(b) >= 4 && string(b[:4]) == "RIFX":
				return fmt.Errorf("audio: %w: big-endian RIFX files are not supported", ErrNotWAV)
			case len(b) >= 4 && (string(b[:4]) == "RF64" || string(b[:4]) == "BW64"):
				return fmt.Errorf("audio: %w: 64-bit %s files are not supported", ErrNotWAV, b[:4])
			case len(b) >= 12 && string(b[:4]) == "RIFF":
				return fmt.Errorf("audio: %w: RIFF form type is %q, want \"WAVE\"", ErrNotWAV, printableID(b[8:12]))
			}
			return fmt.Errorf("audio: %w: starts with %q", ErrNotWAV, printableID(b[:min(len(b), 4)]))
		}
	}
	return nil
}

// parseFmt validates a fmt chunk body and returns the sample layout.
func parseFmt(b []byte) (Format, error) {
	tag := binary.LittleEndian.Uint16(b[0:])
	channels := int(binary.LittleEndian.Uint16(b[2:]))
	rate := int64(binary.LittleEndian.Uint32(b[4:]))
	blockAlign := int(binary.LittleEndian.Uint16(b[12:]))
	bits := int(binary.LittleEndian.Uint16(b[14:]))

	extensible := tag == tagExtensible
	if extensible {
		if len(b) < 40 {
			return Format{}, fmt.Errorf("audio: %w: WAVE_FORMAT_EXTENSIBLE fmt chunk is %d bytes, want 40", ErrBadHeader, len(b))
		}
		validBits := int(binary.LittleEndian.Uint16(b[18:]))
		if !bytes.Equal(b[26:40], ksDataFormatSuffix) {
			return Format{}, fmt.Errorf("audio: %w: WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID", ErrUnsupportedCodec)
		}
		if validBits > bits {
			return Format{}, fmt.Errorf("audio: %w: %d valid bits in a %d-bit container", ErrBadHeader, validBits, bits)
		}
		tag = binary.LittleEndian.Uint16(b[24:])
	}
	if tag != tagPCM && tag != tagFloat {
		if name, ok := codecNames[tag]; ok {
			return Format{}, fmt.Errorf("audio: %w: %s (format tag 0x%04x); convert to PCM first", ErrUnsupportedCodec, name, tag)
		}
		return Format{}, fmt.Errorf("audio: %w: format tag 0x%04x is not PCM or IEEE float", ErrUnsupportedCodec, tag)
	}
	switch {
	case channels == 0:
		return Format{}, fmt.Errorf("audio: %w", ErrNoChannels)
	case channels > MaxChannels:
		return Format{}, fmt.Errorf("audio: %w: %d channels (at most %d)", ErrTooLarge, channels, MaxChannels)
	case rate < MinSampleRate || rate > MaxSampleRate:
		return Format{}, fmt.Errorf("audio: %w: the header declares %d Hz (want %d..%d)", ErrSampleRate, rate, MinSampleRate, MaxSampleRate)
	case bits == 0:
		return Format{}, fmt.Errorf("audio: %w: 0 bits per sample", ErrBadHeader)
	case blockAlign == 0 || blockAlign%channels != 0:
		return Format{}, fmt.Errorf("audio: %w: block align %d for %d channels", ErrBadHeader, blockAlign, channels)
	}
	container := blockAlign / channels // bytes per sample as stored
	if extensible {
		if bits != 8*container {
			return Format{}, fmt.Errorf("audio: %w: %d-bit container but block align %d for %d channels", ErrBadHeader, bits, blockAlign, channels)
		}
	} else if (bits+7)/8 != container {
		return Format{}, fmt.Errorf("audio: %w: %d bits per sample but block align %d for %d channels", ErrBadHeader, bits, blockAlign, channels)
	}
	f := Format{SampleRate: int(rate), Channels: channels}
	if tag == tagFloat {
		if bits != 32 {
			return Format{}, fmt.Errorf("audio: %w: %d-bit float samples (only 32-bit float is supported)", ErrUnsupportedCodec, bits)
		}
		f.Encoding = Float32
		return f, nil
	}
	// Narrower samples (12-bit, 20-bit) are left-justified in their
	// container, so decoding the container gives the right value.
	switch container {
	case 1:
		f.Encoding = Uint8
	case 2:
		f.Encoding = Int16
	case 3:
		f.Encoding = Int24
	case 4:
		f.Encoding = Int32
	default:
		return Format{}, fmt.Errorf("audio: %w: %d-byte integer samples", ErrUnsupportedCodec, container)
	}
	return f, nil
}

// wavHeader returns a canonical header for f: RIFF, a fmt chunk (16 bytes
// for PCM; 18 plus a fact chunk for float, as the spec asks of non-PCM
// formats) and the data chunk header. dataBytes is written as given, so
// streamSize (or unknownSize) marks a stream of unknown length.
func wavHeader(f Format, dataBytes uint32) []byte {
	float := f.Encoding == Float32
	fmtSize := uint32(16)
	if float {
		fmtSize = 18
	}
	h := make([]byte, 0, 58)
	le := binary.LittleEndian
	riffSize := uint64(4+8+fmtSize+8) + uint64(dataBytes) + uint64(dataBytes&1)
	if float {
		riffSize += 12
	}
	if dataBytes == unknownSize || riffSize > unknownSize {
		riffSize = unknownSize
	}
	h = append(h, "RIFF"...)
	h = le.AppendUint32(h, uint32(riffSize))
	h = append(h, "WAVEfmt "...)
	h = le.AppendUint32(h, fmtSize)
	tag := uint16(tagPCM)
	if float {
		tag = tagFloat
	}
	h = le.AppendUint16(h, tag)
	h = le.AppendUint16(h, uint16(f.Channels))
	h = le.AppendUint32(h, uint32(f.SampleRate))
	h = le.AppendUint32(h, uint32(f.SampleRate*f.BlockAlign()))
	h = le.AppendUint16(h, uint16(f.BlockAlign()))
	h = le.AppendUint16(h, uint16(8*f.Encoding.Bytes()))
	if float {
		h = le.AppendUint16(h, 0) // cbSize
		h = append(h, "fact"...)
		h = le.AppendUint32(h, 4)
		frames := uint32(unknownSize)
		if dataBytes != unknownSize && dataBytes != streamSize {
			frames = dataBytes / uint32(f.BlockAlign())
		}
		h = le.AppendUint32(h, frames)
	}
	h = append(h, "data"...)
	h = le.AppendUint32(h, dataBytes)
	return h
}

func truncatedChunk(id string, size uint32, got int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("audio: %w: %s chunk declares %d bytes, input ends after %d", ErrTruncated, id, size, got)
	}
	return fmt.Errorf("audio: reading %s chunk: %w", id, err)
}

// printableID renders a chunk id for an error message without letting
// arbitrary bytes into it.
func printableID(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}
