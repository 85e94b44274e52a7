package tokenizer_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/models/whisper/tokenizer/tokenizertest"
)

// TestEncodeReference compares Encode with transformers.js 3.8.1 (the
// tokenizer that made the goldens) on tricky and random strings; see
// testdata/gen_reference.mjs. transformers.js recognises added tokens in the
// text, so the comparison is with EncodeSpecial.
func TestEncodeReference(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	data, err := os.ReadFile("testdata/reference_encodings.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 300 {
		t.Fatalf("only %d reference cases", len(ref.Cases))
	}
	for _, c := range ref.Cases {
		got, err := tok.EncodeSpecial(c.Text)
		if err != nil {
			t.Errorf("EncodeSpecial(%q): %v", c.Text, err)
			continue
		}
		if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			t.Errorf("EncodeSpecial(%q)\n got %v\nwant %v", c.Text, got, c.IDs)
		}
		// Without added tokens in the text, Encode agrees with it.
		if !strings.Contains(c.Text, "<|") {
			plain, err := tok.Encode(c.Text)
			if err != nil || !slices.Equal(plain, got) {
				t.Errorf("Encode(%q) = %v, %v; EncodeSpecial gave %v", c.Text, plain, err, got)
			}
		}
	}
}

func TestEncodeSpecialTokensAsText(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	sp := tok.Specials()
	plain, err := tok.Encode("<|endoftext|>")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(plain, sp.EOT) || len(plain) < 2 {
		t.Errorf("Encode(<|endoftext|>) = %v, want the characters, not the special token %d", plain, sp.EOT)
	}
	special, err := tok.EncodeSpecial("<|endoftext|>")
	if err != nil || !slices.Equal(special, []int32{sp.EOT}) {
		t.Errorf("EncodeSpecial(<|endoftext|>) = %v, %v; want [%d]", special, err, sp.EOT)
	}
}

func TestEncodeInvalidUTF8(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	for _, s := range []string{"\xff", "abc\xc3", "a\xed\xa0\x80b"} {
		if _, err := tok.Encode(s); !errors.Is(err, tokenizer.ErrInvalidUTF8) {
			t.Errorf("Encode(%q) error = %v, want ErrInvalidUTF8", s, err)
		}
		if _, err := tok.EncodeSpecial(s); !errors.Is(err, tokenizer.ErrInvalidUTF8) {
			t.Errorf("EncodeSpecial(%q) error = %v, want ErrInvalidUTF8", s, err)
		}
	}
}

// TestRoundTrip: decoding the encoding of any valid text gives the text back.
func TestRoundTrip(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	for _, s := range []string{
		"", " ", "Hello, world!", "  two  spaces  ", "\ttabs\tand\nnewlines\r\n",
		"naïve café — “quotes” 🙂👍🏽 日本語のテキスト", "x²+y²=z²", strings.Repeat("ha", 5000),
		strings.Repeat(" ", 1000), strings.Repeat("🙂", 300),
	} {
		ids, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		if got != s {
			t.Errorf("round trip of %q gave %q", trim(s), trim(got))
		}
	}
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

func TestDecodeOptions(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	sp := tok.Specials()
	hello, _ := tok.Encode(" Hello.")
	ids := append([]int32{sp.SOT, sp.Languages[0].ID, sp.Transcribe, sp.TimestampBegin}, hello...)
	ids = append(ids, sp.TimestampBegin+62, sp.EOT)
	for _, c := range []struct {
		opts tokenizer.DecodeOptions
		want string
	}{
		{tokenizer.DecodeOptions{}, " Hello."},
		{tokenizer.DecodeOptions{Timestamps: true}, "<|0.00|> Hello.<|1.24|>"},
		{tokenizer.DecodeOptions{Timestamps: true, TimeOffset: 30.5}, "<|30.50|> Hello.<|31.74|>"},
		{tokenizer.DecodeOptions{Special: true}, "<|startoftranscript|><|en|><|transcribe|> Hello.<|endoftext|>"},
		{tokenizer.DecodeOptions{Special: true, Timestamps: true}, "<|startoftranscript|><|en|><|transcribe|><|0.00|> Hello.<|1.24|><|endoftext|>"},
	} {
		got, err := tok.DecodeWith(ids, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("DecodeWith(%+v) = %q, want %q", c.opts, got, c.want)
		}
	}
	for _, bad := range []int32{-1, int32(tok.Size())} {
		if _, err := tok.Decode([]int32{bad}); err == nil {
			t.Errorf("Decode([%d]) gave no error", bad)
		}
	}
}

func TestDecodeCleanUp(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	ids, _ := tok.Encode("I do n't know , right ?")
	got, _ := tok.DecodeWith(ids, tokenizer.DecodeOptions{CleanUp: true})
	if want := "I don't know, right?"; got != want {
		t.Errorf("clean-up gave %q, want %q", got, want)
	}
}

// TestDecodeCutCharacter: a character split over two tokens decodes to
// U+FFFD when only its first part is there, once per maximal invalid
// subsequence, and whole when both parts are.
func TestDecodeCutCharacter(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	ids, _ := tok.Encode("🙂")
	if len(ids) < 2 {
		t.Skipf("🙂 is one token (%v); nothing to cut", ids)
	}
	got, _ := tok.Decode(ids[:len(ids)-1])
	if got != "\uFFFD" {
		t.Errorf("decoding a cut emoji gave %q, want one U+FFFD", got)
	}
	got, _ = tok.Decode(ids)
	if got != "🙂" {
		t.Errorf("decoding the whole emoji gave %q", got)
	}
}

func TestSpecials(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	sp := tok.Specials()
	if len(sp.Languages) != 99 {
		t.Errorf("%d languages, want 99 (tiny..large-v2)", len(sp.Languages))
	}
	if tok.Size() != 51865 {
		t.Errorf("Size() = %d, want 51865", tok.Size())
	}
	// Ids cross-checked by name with generation_config.json's fields.
	for _, c := range []struct {
		name string
		id   int32
		text string
	}{
		{"EOT", sp.EOT, "<|endoftext|>"},
		{"SOT", sp.SOT, "<|startoftranscript|>"},
		{"Translate", sp.Translate, "<|translate|>"},
		{"Transcribe", sp.Transcribe, "<|transcribe|>"},
		{"StartOfLM", sp.StartOfLM, "<|startoflm|>"},
		{"StartOfPrev", sp.StartOfPrev, "<|startofprev|>"},
		{"NoSpeech", sp.NoSpeech, "<|nocaptions|>"},
		{"NoTimestamps", sp.NoTimestamps, "<|notimestamps|>"},
		{"TimestampBegin", sp.TimestampBegin, "<|0.00|>"},
		{"last timestamp", sp.TimestampBegin + tokenizer.Timestamps - 1, "<|30.00|>"},
		{"Space", sp.Space, " "},
		{"de", mustLang(t, &sp, "de").ID, "<|de|>"},
		{"german", mustLang(t, &sp, "German").ID, "<|de|>"},
		{"castilian", mustLang(t, &sp, "castilian").ID, "<|es|>"},
	} {
		got, err := tok.DecodeWith([]int32{c.id}, tokenizer.DecodeOptions{Special: true, Timestamps: true})
		if err != nil || got != c.text {
			t.Errorf("%s = %d decodes to %q (%v), want %q", c.name, c.id, got, err, c.text)
		}
	}
	if _, err := sp.Language("klingon"); err == nil {
		t.Error("unknown language accepted")
	}
	seq, err := tok.SOTSequence("en", tokenizer.Transcribe, false)
	if err != nil || !slices.Equal(seq, []int32{50258, 50259, 50359, 50363}) {
		t.Errorf("SOTSequence(en, transcribe, no timestamps) = %v, %v; want the golden prefix", seq, err)
	}
	seq, err = tok.SOTSequence("english", tokenizer.Transcribe, true)
	if err != nil || !slices.Equal(seq, []int32{50258, 50259, 50359}) {
		t.Errorf("SOTSequence(english, transcribe, timestamps) = %v, %v; want the golden prefix", seq, err)
	}
	if _, err := tok.SOTSequence("xx", tokenizer.Transcribe, true); err == nil {
		t.Error("SOTSequence accepted an unknown language")
	}
}

func mustLang(t *testing.T, sp *tokenizer.Specials, name string) tokenizer.Language {
	l, err := sp.Language(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNonSpeechTokens: OpenAI's suppress list, computed by encoding its
// symbols, equals the text part of generation_config.json's suppress_tokens,
// which Hugging Face computed with OpenAI's code.
func TestNonSpeechTokens(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	want := []int32{1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93,
		359, 503, 522, 542, 873, 893, 902, 918, 922, 931, 1350, 1853, 1982, 2460, 2627, 3246, 3253, 3268,
		3536, 3846, 3961, 4183, 4667, 6585, 6647, 7273, 9061, 9383, 10428, 10929, 11938, 12033, 12331,
		12562, 13793, 14157, 14635, 15265, 15618, 16553, 16604, 18362, 18956, 20075, 21675, 22520, 26130,
		26161, 26435, 28279, 29464, 31650, 32302, 32470, 36865, 42863, 47425, 49870, 50254}
	if got := tok.NonSpeechTokens(); !slices.Equal(got, want) {
		t.Errorf("NonSpeechTokens()\n got %v\nwant %v", got, want)
	}
}

func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello world", "don't  stop\n\n", "🙂 naïve", "<|0.00|> hi", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := tokenizertest.Tiny(t)
		ids, err := tok.Encode(s)
		if !utf8.ValidString(s) {
			if !errors.Is(err, tokenizer.ErrInvalidUTF8) {
				t.Fatalf("Encode(%q) of invalid UTF-8: err = %v", s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Encode(%q): %v", s, err)
		}
		got, err := tok.Decode(ids)
		if err != nil || got != s {
			t.Fatalf("round trip of %q gave %q, %v", s, got, err)
		}
		special, err := tok.EncodeSpecial(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err = tok.DecodeWith(special, tokenizer.DecodeOptions{Special: true, Timestamps: true})
		if err != nil || got != s {
			t.Fatalf("round trip with added tokens of %q gave %q, %v", s, got, err)
		}
	})
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		tok := tokenizertest.Tiny(t)
		ids := make([]int32, len(b)/2)
		for i := range ids {
			ids[i] = int32(b[2*i])<<8 | int32(b[2*i+1]) // 0..65535: beyond the vocabulary too
		}
		for _, opts := range []tokenizer.DecodeOptions{{}, {Special: true, Timestamps: true, CleanUp: true}} {
			s, err := tok.DecodeWith(ids, opts)
			if err != nil {
				for _, id := range ids {
					if int(id) >= tok.Size() {
						return
					}
				}
				t.Fatalf("DecodeWith(%v): %v", ids, err)
			}
			if !utf8.ValidString(s) {
				t.Fatalf("DecodeWith(%v) gave invalid UTF-8 %q", ids, s)
			}
		}
	})
}

// TestBPEPathsAgree: the heap and the linear scan merge alike.
func TestBPEPathsAgree(t *testing.T) {
	tok := tokenizertest.Tiny(t)
	data, err := os.ReadFile("testdata/reference_encodings.json")
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{string(data), strings.Repeat("abracadabra", 20), "supercalifragilisticexpialidocious"}
	for _, s := range texts {
		want, err := tok.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.EncodeHeap(s); !slices.Equal(got, want) {
			t.Errorf("heap BPE differs on %q", trim(s))
		}
	}
}
