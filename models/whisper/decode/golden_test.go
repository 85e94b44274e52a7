package decode

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tensorforge/forge/models/whisper/tokenizer/tokenizertest"
)

// readF32 reads one float32 tensor from a safetensors file (8-byte header
// length, JSON header, data), enough for the golden files.
func readF32(t *testing.T, path, name string) ([]float32, []int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8 {
		t.Fatalf("%s: truncated", path)
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		t.Fatalf("%s: header length %d past the end", path, n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	var info struct {
		Dtype   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(header[name], &info); err != nil || info.Dtype != "F32" {
		t.Fatalf("%s: tensor %s: %v (dtype %q)", path, name, err, info.Dtype)
	}
	raw := data[8+n:][info.Offsets[0]:info.Offsets[1]]
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, info.Shape
}

// TestGoldenFirstToken applies the rules to the golden first decoder call
// (prefix <|startoftranscript|><|en|><|transcribe|><|notimestamps|>): the
// logits at position 3 give the first token without timestamps, those at
// position 2 (the 3-token prefix) the first token with timestamps. Both rule
// sets must pick the golden tokens; under OpenAI's rules the full suppress
// list and the text ban at the first position apply as well.
func TestGoldenFirstToken(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	sp := tok.Specials()
	for _, model := range []string{"whisper-tiny", "whisper-base"} {
		dir := tokenizertest.GoldenDir(t, model)
		var g struct {
			TokenIDs   []int32 `json:"token_ids"`
			TokenIDsTS []int32 `json:"token_ids_timestamps"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "jfk.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		logits, shape := readF32(t, filepath.Join(dir, "jfk.safetensors"), "decoder_step0_logits")
		v := tok.Size()
		if !slices.Equal(shape, []int{1, 4, v}) {
			t.Fatalf("%s: step-0 logits shape %v", model, shape)
		}
		openai := OpenAIOptions(tok)
		for _, c := range []struct {
			name       string
			opts       Options
			timestamps bool
		}{
			{"transformers.js", TransformersJSOptions("en", false), false},
			{"transformers.js timestamps", TransformersJSOptions("en", true), true},
			{"openai", openai, false},
			{"openai timestamps", openai, true},
		} {
			o := c.opts
			o.Timestamps, o.Language = c.timestamps, "en"
			pos, want := 3, g.TokenIDs[4]
			if c.timestamps {
				pos, want = 2, g.TokenIDsTS[3]
			}
			tk, err := newTask(nil, v, &sp, o, "en", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tk.sampleBegin != pos+1 {
				t.Fatalf("prefix of %d tokens, want %d", tk.sampleBegin, pos+1)
			}
			row := slices.Clone(logits[pos*v : (pos+1)*v])
			for _, f := range tk.filters {
				f.Apply(row, tk.initial)
			}
			if got := argmax(row); got != want {
				t.Errorf("%s, %s rules: first token %d, want %d", model, c.name, got, want)
			}
		}
	}
}
