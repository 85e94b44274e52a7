package whisper

import (
	"testing"
)

const tinyConfig = `{"num_mel_bins": 80, "max_source_positions": 1500, "max_target_positions": 448,
 "vocab_size": 51865, "d_model": 384, "encoder_layers": 4, "decoder_layers": 4,
 "encoder_attention_heads": 6, "decoder_attention_heads": 6, "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536}`

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]byte(tinyConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.DModel != 384 || c.DecoderHeads != 6 || c.Frames() != 3000 || c.Vocab != 51865 {
		t.Errorf("config %+v", c)
	}
	for name, bad := range map[string]string{
		"not JSON":       `{"d_model": `,
		"missing fields": `{"d_model": 384}`,
		"heads":          `{"num_mel_bins": 80, "max_source_positions": 1500, "max_target_positions": 448, "vocab_size": 51865, "d_model": 384, "encoder_layers": 4, "decoder_layers": 4, "encoder_attention_heads": 5, "decoder_attention_heads": 6, "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536}`,
		"negative":       `{"num_mel_bins": -80, "max_source_positions": 1500, "max_target_positions": 448, "vocab_size": 51865, "d_model": 384, "encoder_layers": 4, "decoder_layers": 4, "encoder_attention_heads": 6, "decoder_attention_heads": 6, "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536}`,
		"huge":           `{"num_mel_bins": 80, "max_source_positions": 1500, "max_target_positions": 448, "vocab_size": 99999999999, "d_model": 384, "encoder_layers": 4, "decoder_layers": 4, "encoder_attention_heads": 6, "decoder_attention_heads": 6, "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536}`,
	} {
		if _, err := parseConfig([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(tinyConfig))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"d_model": 0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			return
		}
		if c.DModel <= 0 || c.DModel%c.EncoderHeads != 0 || c.DModel%c.DecoderHeads != 0 || c.NMels <= 0 || c.Vocab <= 0 {
			t.Fatalf("accepted config %+v", c)
		}
	})
}
