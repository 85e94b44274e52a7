package whisper

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tensorforge/forge/weights"
)

// Errors for bad model choices.
var (
	// ErrUnknownModel: a model name other than the sizes Models lists.
	ErrUnknownModel = errors.New("whisper: unknown model")
	// ErrUnknownPrecision: a precision other than "f32", "int8" or "bf16".
	ErrUnknownPrecision = errors.New("whisper: unknown precision")
	// ErrClosed: the model or window was closed.
	ErrClosed = errors.New("whisper: use after Close")
)

// models maps the user-facing size names to weights artifact ids.
var models = map[string]string{
	"tiny":  weights.WhisperTiny,
	"base":  weights.WhisperBase,
	"small": weights.WhisperSmall,
}

// Models lists the model sizes Open accepts.
func Models() []string {
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ArtifactID returns the weights artifact id of a model size ("tiny" →
// "whisper-tiny"); the artifact id itself is accepted too.
func ArtifactID(name string) (string, error) {
	if id, ok := models[name]; ok {
		return id, nil
	}
	for _, id := range models {
		if id == name {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w %q (have %s)", ErrUnknownModel, name, strings.Join(Models(), ", "))
}

// Precision selects the arithmetic of the quantized layers.
type Precision int

const (
	// F32 dequantizes the weights once and runs float32 activations.
	F32 Precision = iota
	// Int8 runs the ONNX graph's arithmetic: dynamically quantized uint8
	// activations times int8/uint8 weights in int32.
	Int8
	// BF16 is F32 with the encoder's matrix products and convolutions in
	// bfloat16 (operands rounded, sums in float32) where the backend has
	// bfloat16 units: the CPU's AMX tiles, or AVX512_BF16 on AMD; and the decoder
	// steps' products on rows rounded to 16-bit fixed point where it has
	// 8-bit dot-product units (AVX512_VNNI). Elsewhere it computes as F32.
	// See bf16.go for what it costs in accuracy.
	BF16
)

// String returns the flag spelling: "f32", "int8" or "bf16".
func (p Precision) String() string {
	switch p {
	case F32:
		return "f32"
	case Int8:
		return "int8"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision parses "f32", "int8" or "bf16".
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(s) {
	case "f32", "fp32", "float32":
		return F32, nil
	case "int8", "i8", "q8":
		return Int8, nil
	case "bf16", "bfloat16":
		return BF16, nil
	}
	return 0, fmt.Errorf("%w %q (want f32, int8 or bf16)", ErrUnknownPrecision, s)
}

// Config holds a model's dimensions, from the artifact's config.json.
type Config struct {
	NMels         int `json:"num_mel_bins"`            // 80
	AudioCtx      int `json:"max_source_positions"`    // 1500 encoder positions
	TextCtx       int `json:"max_target_positions"`    // 448 decoder positions
	Vocab         int `json:"vocab_size"`              // 51865
	DModel        int `json:"d_model"`                 // 384 tiny, 512 base, 768 small
	EncoderLayers int `json:"encoder_layers"`          // 4 tiny, 6 base, 12 small
	DecoderLayers int `json:"decoder_layers"`          // 4 tiny, 6 base, 12 small
	EncoderHeads  int `json:"encoder_attention_heads"` // 6 tiny, 8 base, 12 small
	DecoderHeads  int `json:"decoder_attention_heads"` // 6 tiny, 8 base, 12 small
	EncoderFFN    int `json:"encoder_ffn_dim"`         // 4·d
	DecoderFFN    int `json:"decoder_ffn_dim"`         // 4·d
}

// parseConfig reads config.json and checks the dimensions fit together.
func parseConfig(data []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("whisper: config.json: %w", err)
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	return c, nil
}

func (c Config) validate() error {
	dims := []int{c.NMels, c.AudioCtx, c.TextCtx, c.Vocab, c.DModel, c.EncoderLayers, c.DecoderLayers,
		c.EncoderHeads, c.DecoderHeads, c.EncoderFFN, c.DecoderFFN}
	for _, d := range dims {
		if d <= 0 || d > 1<<20 {
			return fmt.Errorf("whisper: config.json: dimension %d out of range in %+v", d, c)
		}
	}
	if c.DModel%c.EncoderHeads != 0 || c.DModel%c.DecoderHeads != 0 {
		return fmt.Errorf("whisper: config.json: d_model %d is not a multiple of the head counts %d/%d", c.DModel, c.EncoderHeads, c.DecoderHeads)
	}
	return nil
}

// Frames returns the number of mel frames of one window: twice the
// encoder's positions (conv2 has stride 2), 3000.
func (c Config) Frames() int { return 2 * c.AudioCtx }
