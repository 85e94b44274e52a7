package weights

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/weights/internal/mmap"
	"github.com/tensorforge/forge/weights/safetensors"
)

// convertVoices gathers the 54 Kokoro voice files into one safetensors file,
// one F32 [510,256] tensor per voice named by the voice ("af_heart",
// "am_michael", ...). Row n is the style vector for an utterance of n
// phonemes (not counting the two pad ids). One mapped file instead of 54
// keeps voice lookup a map access; the .bin sources stay in src/ as well.
func convertVoices(ctx context.Context, src func(string) string) (*conversion, error) {
	c := newConversion()
	for _, v := range kokoroVoices {
		if err := ctx.Err(); err != nil {
			c.close()
			return nil, err
		}
		f, err := mmap.Open(src(v.name + ".bin"))
		if err != nil {
			c.close()
			return nil, err
		}
		c.closers = append(c.closers, f.Close)
		if len(f.Data) != voiceBytes {
			c.close()
			return nil, fmt.Errorf("voice %s: %d bytes, want %d", v.name, len(f.Data), voiceBytes)
		}
		if err := c.add(v.name, safetensors.F32, []int{510, 256}, f.Data); err != nil {
			c.close()
			return nil, err
		}
	}
	c.note("one tensor per voice, [510,256]: row n = style for n phonemes (without pads)")
	return c, nil
}
