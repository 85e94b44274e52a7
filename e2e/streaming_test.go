package e2e

import (
	"strings"
	"testing"

	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/whisper/wer"
)

// streamedSentences are the texts whose first pieces were heard back
// changed when the first piece was a separate utterance ("The quick
// brown. Fox jumps…", "16. Killerhertz output.", "Forge turns. This
// sentence…"), and the 30-word benchmark paragraph.
var streamedSentences = []string{
	"The quick brown fox jumps over the lazy dog.",
	"Sixteen kilohertz output.",
	"Forge turns this sentence into speech, and then it listens to the recording and writes it back down.",
	"The old lighthouse keeper climbed the winding stairs each evening, lit the great lamp, " +
		"and watched ships pass safely through the narrow channel toward the quiet harbor beyond the hill.",
}

// TestStreamingKeepsSpeech speaks each sentence with the first piece
// streamed (kokoro.DefaultFirstTokens) and unstreamed, and has Whisper base
// transcribe both: the transcripts must agree word for word, and streaming
// must not add a sentence break (a . ! or ? before the end).
func TestStreamingKeepsSpeech(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Kokoro and Whisper base; skipped in -short mode")
	}
	rt := loadRoundTrip(t)
	for _, text := range streamedSentences {
		whole, wholeAudio := rt.sayListen(t, text, "af_heart", 0)
		streamed, streamedAudio := rt.sayListen(t, text, "af_heart", kokoro.DefaultFirstTokens)
		t.Logf("%q\n  whole    %q (%.2f s)\n  streamed %q (%.2f s)", text, whole, seconds(wholeAudio), streamed, seconds(streamedAudio))
		if r := wer.Compare(whole, streamed); r.Errors() != 0 {
			t.Errorf("%q: streamed transcript differs from the unstreamed one in %d of %d words", text, r.Errors(), r.Words)
		}
		if a, b := sentenceBreaks(whole), sentenceBreaks(streamed); b > a {
			t.Errorf("%q: streaming added a sentence break (%d → %d)", text, a, b)
		}
	}
}

// sentenceBreaks counts sentence-ending punctuation before the last word.
func sentenceBreaks(s string) int {
	s = strings.TrimRight(strings.TrimSpace(s), ".!?")
	return strings.Count(s, ".") + strings.Count(s, "!") + strings.Count(s, "?")
}

func seconds(pcm []float32) float64 { return float64(len(pcm)) / kokoro.SampleRate }
