package decode

import (
	"context"
	"fmt"
	"math"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// Detection is the outcome of language detection.
type Detection struct {
	Language tokenizer.Language // the most likely language
	// Probs maps every language code to its probability, the softmax over
	// the language tokens' logits.
	Probs map[string]float64
}

// DetectLanguage runs the decoder on <|startoftranscript|> alone and reads
// the distribution over the language tokens, as OpenAI's detect_language:
// all other tokens are masked, the first maximum wins.
func DetectLanguage(ctx context.Context, dec Decoder, vocab Vocabulary) (Detection, error) {
	sp := vocab.Specials()
	return detectLanguage(ctx, dec, vocab.Size(), &sp)
}

func detectLanguage(ctx context.Context, dec Decoder, vocab int, sp *tokenizer.Specials) (Detection, error) {
	if len(sp.Languages) == 0 {
		return Detection{}, fmt.Errorf("detect language: the vocabulary is English-only and has no language tokens")
	}
	row := make([]float32, vocab)
	if err := dec.Start(ctx, 1, []int32{sp.SOT}, []int{0}, [][]float32{row}); err != nil {
		return Detection{}, fmt.Errorf("detect language: decoder pass: %w", err)
	}
	best := -1
	m := math.Inf(-1)
	for i, l := range sp.Languages {
		if int(l.ID) >= vocab {
			return Detection{}, fmt.Errorf("detect language: token %d of %q is outside the %d logits", l.ID, l.Code, vocab)
		}
		if v := float64(row[l.ID]); v > m {
			m, best = v, i
		}
	}
	if best < 0 {
		return Detection{}, fmt.Errorf("detect language: %w", ErrAllSuppressed)
	}
	var sum float64
	for _, l := range sp.Languages {
		sum += math.Exp(float64(row[l.ID]) - m)
	}
	probs := make(map[string]float64, len(sp.Languages))
	for _, l := range sp.Languages {
		probs[l.Code] = math.Exp(float64(row[l.ID])-m) / sum
	}
	return Detection{Language: sp.Languages[best], Probs: probs}, nil
}
