// Command say speaks text with Kokoro-82M.
//
//	say [flags] TEXT...        speak the arguments
//	echo TEXT | say [flags]    speak standard input (streamed: long input is fine)
//	say -f FILE [flags]        speak a file ("-": standard input)
//
// Text runs through speech/say's pipeline of goroutine stages: the front-end (text →
// sentence chunks → phonemes → ids), Kokoro (ids → 24 kHz audio, one chunk
// at a time), an optional resampler, and a sink that writes a WAV file
// (-o) or, in a build with the portaudio tag, plays to the speaker. The
// first sentence's audio leaves while later ones are still synthesised.
//
// Flags:
//
//	-o FILE            write the audio (16-bit PCM) instead of playing; "-" for stdout
//	--format wav|raw   WAV (default) or raw s16le mono PCM at --rate, as piper's
//	                   --output-raw; without -o, to stdout
//	-f, --input-file F read the text from F ("-": stdin), as standard input is
//	                   read: a line break or a sentence end ends an utterance
//	--ipa              print the phonemes, a line per chunk, instead of speaking
//	--rate HZ          output sample rate (default 24000, Kokoro's own)
//	--voice SPEC       a voice (af_heart) or a weighted mix (af_heart,am_michael:0.5)
//	--speed X          speaking rate (1 = normal)
//	--lang CODE        phonemiser language, an espeak-ng code: en-us, en-gb (en),
//	                   es, fr (fr-fr), hi, it, pt-br (default: the voice's)
//	--int8             use the int8 (dynamically quantized) artifact
//	--fp32             every layer in float32 (default: the decoder in bfloat16 on CPUs with AMX, or AVX512_BF16 on AMD)
//	--scorecard FILE   write a JSON scorecard: TTFA, RTF, per-stage metrics
//	--device NAME      compute backend: cpu, cuda, metal or auto (default $FORGE_DEVICE, else auto)
//	--list-voices      print the voices, their language and gender, and exit
//	--first N          stream the audio in pieces, the first within about N phoneme tokens (0: every sentence whole)
//	--max-tokens N     longest chunk in phoneme tokens (default 200, at most 510)
//	--log LEVEL        debug, info, warn, error or off (default $FORGE_LOG, else warn)
//
// Languages: Kokoro-82M v1.0's American and British English (kokoro-js's
// front-end), Spanish, French, Hindi, Italian and Brazilian Portuguese
// (misaki's espeak-ng front-end, as Kokoro's own pipeline), each through
// espeak-ng. Kokoro's Japanese and Mandarin voices are not listed: they
// need G2Ps of their own (pyopenjtalk; pypinyin and jieba) with no
// maintained Go or espeak-ng equivalent.
//
// A word too long for one chunk (a commit hash, a 30-digit number, a
// chemical name) is cut into pieces, hex and digit strings read out in
// groups ("3f78, 6850, …"); a character that still does not fit is left
// out with a warning on stderr, and the rest is said.
//
// The scorecard's TTFA runs from the pipeline's start (the text accepted)
// to the first audio sample out, with the model loaded and warmed
// (Model.Warm runs before the pipeline starts: first-use costs such as
// weight packing count in the load, label warm_ms, not in TTFA).
//
// Models are fetched into the cache on first use (progress on stderr).
//
// -o FILE.wav is written whole or not at all: the audio goes to a
// temporary file beside it (.FILE.wav.tmp-XXXX), renamed over FILE.wav
// when the run succeeds. A run that fails, runs out of disk space or is
// stopped by a signal removes the temporary file and leaves FILE.wav as it
// was (or absent). A FILE.wav that is not a regular file (a FIFO,
// /dev/stdout on a pipe), and "-", are streamed to in place, with the
// WAV's sizes marked unknown (0x7FFFF000 bytes, as sox writes to a pipe:
// soxi shows no duration, sox, ffmpeg and Python's wave read to the end
// of the stream; a seekable output gets its exact sizes at the end): a
// stream stopped early is still a valid WAV of whole samples, just
// shorter.
//
// Exit codes:
//
//	0    success (and -h)
//	1    a failed run (bad text, missing model, full disk, ...)
//	2    bad flags or arguments (an unknown or unavailable --device or
//	     $FORGE_DEVICE among them)
//	130  stopped by SIGINT (Ctrl-C)
//	143  stopped by SIGTERM
//
// After SIGINT or SIGTERM, say stops synthesising, removes its temporary
// file and exits; a second signal ends it at once.
package main

import (
	"context"
	"os"

	"github.com/tensorforge/forge/internal/gcpace"
	"github.com/tensorforge/forge/internal/sigexit"
)

func main() {
	gcpace.Apply()
	ctx, stop := sigexit.Context(context.Background())
	code := exitCode(ctx, run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr)
	stop()
	os.Exit(code)
}
