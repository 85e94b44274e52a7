package kokoro

import (
	"context"
	"fmt"
	"github.com/tensorforge/forge/weights"

	"github.com/tensorforge/forge/weights/safetensors"
)

// convertVoices gathers the 54 Kokoro voice files into one safetensors file,
// one F32 [510,256] tensor per voice named by the voice ("af_heart",
// "am_michael", ...). Row n is the style vector for an utterance of n
// phonemes (not counting the two pad ids). One mapped file instead of 54
// keeps voice lookup a map access; the .bin sources stay in src/ as well.
func convertVoices(ctx context.Context, src func(string) string) (*weights.Conversion, error) {
	c := weights.NewConversion()
	for _, v := range voiceSums {
		if err := ctx.Err(); err != nil {
			c.Close()
			return nil, err
		}
		data, err := c.MapFile(src(v.name + ".bin"))
		if err != nil {
			c.Close()
			return nil, err
		}
		if len(data) != voiceBytes {
			c.Close()
			return nil, fmt.Errorf("voice %s: %d bytes, want %d", v.name, len(data), voiceBytes)
		}
		if err := c.Add(v.name, safetensors.F32, []int{510, 256}, data); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.Note("one tensor per voice, [510,256]: row n = style for n phonemes (without pads)")
	return c, nil
}
