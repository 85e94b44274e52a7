package audio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Container is an audio file format as recognised from its first bytes.
type Container uint8

// Containers Open can tell apart. WAV, FLAC, MP3 and Ogg/Vorbis decode; the
// others are recognised so that the error can name them.
const (
	// UnknownContainer: the first bytes match no format known here.
	UnknownContainer Container = iota
	// RawPCM is headerless PCM (NewRawReader); it is never sniffed.
	RawPCM
	// WAV is RIFF/WAVE (also RIFX, RF64 and BW64, which the WAV parser
	// refuses by name).
	WAV
	// FLAC is native FLAC ("fLaC").
	FLAC
	// MP3 is MPEG-1/2/2.5 Layer III, with or without an ID3v2 tag first.
	MP3
	// MPEGLayer12 is MPEG audio Layer I or II (MP1/MP2).
	MPEGLayer12
	// OggVorbis is Vorbis in an Ogg stream.
	OggVorbis
	// OggOpus is Opus in an Ogg stream.
	OggOpus
	// OggFLAC is FLAC in an Ogg stream.
	OggFLAC
	// OggSpeex is Speex in an Ogg stream.
	OggSpeex
	// OggTheora is an Ogg stream that starts with Theora video.
	OggTheora
	// Ogg is an Ogg stream of another or unreadable codec.
	Ogg
	// MP4 is an ISO base media file (MP4/M4A: AAC or ALAC).
	MP4
	// AACADTS is raw AAC in ADTS frames (.aac).
	AACADTS
	// AIFF is Apple's AIFF or AIFF-C.
	AIFF
	// CAF is Apple's Core Audio Format.
	CAF
	// Matroska is Matroska or WebM.
	Matroska
	// ASF is Microsoft's ASF (WMA).
	ASF
	// AU is Sun/NeXT .au/.snd.
	AU
	// AMR is 3GPP AMR (narrow or wide band).
	AMR
	// WavPack is WavPack.
	WavPack
	// APE is Monkey's Audio.
	APE
)

var containerNames = [...]string{
	UnknownContainer: "unknown format",
	RawPCM:           "raw PCM",
	WAV:              "WAV",
	FLAC:             "FLAC",
	MP3:              "MP3",
	MPEGLayer12:      "MPEG audio Layer I/II (MP1/MP2)",
	OggVorbis:        "Ogg/Vorbis",
	OggOpus:          "Ogg/Opus",
	OggFLAC:          "Ogg/FLAC",
	OggSpeex:         "Ogg/Speex",
	OggTheora:        "Ogg/Theora (video)",
	Ogg:              "Ogg",
	MP4:              "AAC/MP4",
	AACADTS:          "AAC (ADTS)",
	AIFF:             "AIFF",
	CAF:              "Core Audio Format (CAF)",
	Matroska:         "Matroska/WebM",
	ASF:              "ASF/WMA",
	AU:               "Sun AU",
	AMR:              "AMR",
	WavPack:          "WavPack",
	APE:              "Monkey's Audio (APE)",
}

// String names the format as error messages do ("AAC/MP4", "Ogg/Vorbis").
func (c Container) String() string {
	if int(c) < len(containerNames) {
		return containerNames[c]
	}
	return fmt.Sprintf("Container(%d)", uint8(c))
}

// Decodable reports whether Open decodes this format.
func (c Container) Decodable() bool {
	return c == WAV || c == FLAC || c == MP3 || c == OggVorbis
}

// sniffLen is how many bytes Sniff needs to tell every format apart: an Ogg
// page header with up to 255 lacing values would need more, but the first
// page of every codec above carries one segment, so 28+8 bytes name it.
const sniffLen = 64

// Sniff names the format of a file from its first bytes (SniffLen of them
// are enough; fewer may leave it UnknownContainer). An ID3v2 tag is not
// looked through here: Open skips it and sniffs what follows, so a FLAC
// file with an ID3 tag in front is still FLAC. detail adds what the bytes
// say beyond the name (an MP4 brand, the bytes of an unknown magic), for
// error messages; it is always printable.
func Sniff(head []byte) (c Container, detail string) {
	has := func(off int, magic string) bool {
		return len(head) >= off+len(magic) && string(head[off:off+len(magic)]) == magic
	}
	switch {
	case has(0, "RIFF"), has(0, "RIFX"), has(0, "RF64"), has(0, "BW64"):
		return WAV, "" // the WAV parser names a RIFF of another form
	case has(0, "fLaC"):
		return FLAC, ""
	case has(0, "ID3"):
		return MP3, "ID3v2 tag" // a guess until the tag is skipped
	case has(0, "OggS"):
		return sniffOgg(head)
	case has(4, "ftyp"):
		return MP4, fmt.Sprintf("ftyp %q", printableID(head[8:min(len(head), 12)]))
	case has(0, "FORM") && (has(8, "AIFF") || has(8, "AIFC")):
		return AIFF, ""
	case has(0, "caff"):
		return CAF, ""
	case has(0, "\x1a\x45\xdf\xa3"):
		return Matroska, ""
	case has(0, "\x30\x26\xb2\x75\x8e\x66\xcf\x11"):
		return ASF, ""
	case has(0, ".snd"):
		return AU, ""
	case has(0, "#!AMR"):
		return AMR, ""
	case has(0, "wvpk"):
		return WavPack, ""
	case has(0, "MAC "):
		return APE, ""
	case has(0, "ADIF"):
		return AACADTS, "ADIF"
	}
	if len(head) >= 4 {
		if c, ok := sniffMPEG(binary.BigEndian.Uint32(head)); ok {
			return c, ""
		}
	}
	return UnknownContainer, describeMagic(head)
}

// sniffMPEG classifies a would-be MPEG audio or ADTS frame header.
func sniffMPEG(h uint32) (Container, bool) {
	if h>>20 == 0xFFF && (h>>17)&3 == 0 {
		return AACADTS, true // ADTS: MPEG sync with layer bits 00
	}
	if _, err := parseMPEGHeader(h); err == nil {
		return MP3, true
	}
	if h>>21 == 0x7FF && (h>>19)&3 != 1 && (h>>17)&3 != 0 && (h>>17)&3 != 1 && (h>>12)&15 != 15 && (h>>10)&3 != 3 {
		return MPEGLayer12, true
	}
	return UnknownContainer, false
}

// sniffOgg names the codec of an Ogg stream from its first packet, which
// every mapping puts alone on the first page.
func sniffOgg(head []byte) (Container, string) {
	if len(head) < 27 {
		return Ogg, ""
	}
	segs := int(head[26])
	return sniffOggPacket(head[min(len(head), 27+segs):])
}

// oggCodecs are the first bytes of the first packet of Ogg mappings; the
// rarer ones are named in the detail only.
var oggCodecs = []struct {
	magic  string
	c      Container
	detail string
}{
	{"\x01vorbis", OggVorbis, ""},
	{"OpusHead", OggOpus, ""},
	{"\x7fFLAC", OggFLAC, ""},
	{"Speex   ", OggSpeex, ""},
	{"\x80theora", OggTheora, ""},
	{"fishead\x00", Ogg, "a Skeleton stream first"},
	{"CELT    ", Ogg, "CELT"},
	{"\x80kate\x00\x00\x00", Ogg, "Kate"},
	{"BBCD\x00", Ogg, "Dirac video"},
	{"OVP80", Ogg, "VP8 video"},
	{"PCM     ", Ogg, "OggPCM"},
}

// sniffOggPacket names the codec whose first packet starts with packet.
func sniffOggPacket(packet []byte) (Container, string) {
	for _, m := range oggCodecs {
		if bytes.HasPrefix(packet, []byte(m.magic)) {
			return m.c, m.detail
		}
	}
	if len(packet) == 0 {
		return Ogg, ""
	}
	return Ogg, "codec unknown: the first packet " + describeMagic(packet)
}

// oggCut reports whether a short input that starts an Ogg stream ends
// before the signature of its first packet.
func oggCut(head []byte) bool {
	return len(head) < 27 || len(head) < 27+int(head[26])+8
}

// describeMagic renders the first bytes of an unknown file as hex, and as
// text too when they are printable ASCII.
func describeMagic(head []byte) string {
	if len(head) == 0 {
		return "empty input"
	}
	b := head[:min(len(head), 8)]
	var sb strings.Builder
	sb.WriteString("starts with bytes")
	printable := true
	for _, c := range b {
		fmt.Fprintf(&sb, " %02x", c)
		if c < 0x20 || c > 0x7e {
			printable = false
		}
	}
	if printable {
		fmt.Fprintf(&sb, " (%q)", b)
	}
	return sb.String()
}
