// Package audio reads and writes PCM audio: WAV files (through
// github.com/go-audio/wav) and headerless raw PCM, whole-file or as a stream
// of fixed-size frames, always delivered as mono float32 samples. Open and
// Decode also read FLAC (github.com/mewkiz/flac), MP3
// (github.com/hajimehoshi/go-mp3) and Ogg/Vorbis
// (github.com/jfreymuth/oggvorbis), telling the format by its first bytes,
// and name the formats they recognise but do not decode (AAC/MP4,
// Ogg/Opus, ...). Whatever the format, a file cut short is an error
// wrapping ErrTruncated after every whole frame (Ogg: every whole page)
// before the cut.
//
// Integer samples convert by dividing by the full scale of their width
// (int16 s → s/32768, exactly as the Whisper and Silero reference pipelines
// do), so they land in [-1, 1). 32-bit float WAV data and Vorbis's float
// output pass through unchanged. Several channels are down-mixed to their
// mean.
//
// Every header is parsed and validated here before go-audio/wav sees any
// byte: go-audio/wav trusts chunk sizes (a bogus LIST chunk can make it
// allocate gigabytes), cannot stream from a non-seekable reader and cannot
// express a data chunk of unknown length. So the decoder is handed a
// canonical 44-byte header rebuilt from the validated fields, followed by
// the sample bytes, and only ever decodes samples. Bad input yields an error
// wrapping one of the Err* values below; nothing panics.
package audio
