package tokenizer_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// byteLevel is GPT-2's byte → rune table, written out independently of the
// package's own.
func byteLevel(b byte) string {
	printable := ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || b >= 0xAE
	if printable {
		return string(rune(b))
	}
	n := 0
	for c := 0; c < int(b); c++ {
		cc := byte(c)
		if !(('!' <= cc && cc <= '~') || (0xA1 <= cc && cc <= 0xAC) || cc >= 0xAE) {
			n++
		}
	}
	return string(rune(256 + n))
}

// syntheticJSON builds a small Whisper-shaped tokenizer.json: the 256 bytes,
// a few merges, and the special tokens of an English+Chinese vocabulary
// without listed timestamps.
func syntheticJSON(t testing.TB, edit func(m map[string]any)) []byte {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[byteLevel(byte(b))] = b
	}
	sp := byteLevel(' ')
	merges := []string{"l l", sp + " h", "e ll", sp + "h ell", "o w"}
	for _, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		vocab[a+b] = len(vocab)
	}
	next := len(vocab)
	var added []map[string]any
	for _, s := range []string{"<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|zh|>", "<|translate|>",
		"<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"} {
		added = append(added, map[string]any{"id": next, "content": s, "special": true})
		next++
	}
	m := map[string]any{
		"added_tokens":  added,
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	if edit != nil {
		edit(m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSynthetic(t *testing.T) {
	tok, err := tokenizer.Parse(syntheticJSON(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	sp := tok.Specials()
	if sp.EOT != 261 || sp.SOT != 262 || sp.NoSpeech != 269 || sp.NoTimestamps != 270 || sp.TimestampBegin != 271 {
		t.Errorf("specials %+v", sp)
	}
	if len(sp.Languages) != 2 || sp.Languages[1].Code != "zh" || sp.Languages[1].ID != 264 {
		t.Errorf("languages %+v", sp.Languages)
	}
	if tok.Size() != 271+tokenizer.Timestamps {
		t.Errorf("Size() = %d, want room for the timestamps", tok.Size())
	}
	// " hello" → "Ġhell" + "o" (merges Ġ h, l l, e ll, Ġh ell); " how" → "Ġh" "ow".
	ids, err := tok.Encode(" hello how")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{259, 'o', 257, 260}; !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	got, err := tok.DecodeWith(append(ids, sp.TimestampBegin+50), tokenizer.DecodeOptions{Timestamps: true})
	if err != nil || got != " hello how<|1.00|>" {
		t.Errorf("Decode = %q, %v", got, err)
	}
}

func TestParseErrors(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"not BPE":    func(m map[string]any) { m["model"].(map[string]any)["type"] = "WordPiece" },
		"no pre-tok": func(m map[string]any) { delete(m, "pre_tokenizer") },
		"prefix space": func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true}
		},
		"missing byte": func(m map[string]any) { delete(m["model"].(map[string]any)["vocab"].(map[string]int), "a") },
		"bad merge":    func(m map[string]any) { m["model"].(map[string]any)["merges"] = []string{"x y"} },
		"merge no sep": func(m map[string]any) { m["model"].(map[string]any)["merges"] = []string{"xy"} },
		"no SOT": func(m map[string]any) {
			m["added_tokens"] = m["added_tokens"].([]map[string]any)[:1]
		},
		"negative id": func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]int)["zz"] = -5 },
		"huge id":     func(m map[string]any) { m["model"].(map[string]any)["vocab"].(map[string]int)["zz"] = 1 << 30 },
		"duplicate id": func(m map[string]any) {
			m["model"].(map[string]any)["vocab"].(map[string]int)["zz"] = 3
		},
		"language gap": func(m map[string]any) {
			a := m["added_tokens"].([]map[string]any)
			a[2]["content"] = "<|xx|>" // <|en|> gone, <|zh|> still there
		},
	} {
		if _, err := tokenizer.Parse(syntheticJSON(t, edit)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	for _, bad := range []string{"", "{", "[]", `{"model":{}}`, "null"} {
		if _, err := tokenizer.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

func TestMergesAsPairs(t *testing.T) {
	data := syntheticJSON(t, func(m map[string]any) {
		model := m["model"].(map[string]any)
		var pairs [][2]string
		for _, s := range model["merges"].([]string) {
			a, b, _ := strings.Cut(s, " ")
			pairs = append(pairs, [2]string{a, b})
		}
		model["merges"] = pairs
	})
	tok, err := tokenizer.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := tok.Encode(" hello"); !slices.Equal(ids, []int32{259, 'o'}) {
		t.Errorf("Encode = %v", ids)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(syntheticJSON(f, nil))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := tokenizer.Parse(data)
		if err != nil {
			return
		}
		ids, err := tok.Encode("hello world, 123 🙂")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tok.Decode(ids); err != nil {
			t.Fatal(err)
		}
	})
}
