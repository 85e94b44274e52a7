package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ErrInvalidUTF8 is returned by Encode for text that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("text is not valid UTF-8")

// Tokenizer is Whisper's byte-level BPE tokenizer.
type Tokenizer struct {
	tokens  []token          // by id
	byteID  [256]int32       // the token of each single byte
	merges  map[uint64]merge // (left id, right id) → merge
	added   map[string]int32 // added-token content → id
	addLens []int            // distinct lengths of added contents, longest first
	addHead [256]bool        // first bytes of added contents
	special Specials
}

// token is one vocabulary entry.
type token struct {
	text    []byte // the bytes it stands for
	kind    tokenKind
	present bool
}

type tokenKind uint8

const (
	kindBPE     tokenKind = iota // a BPE token: bytes of text
	kindAdded                    // an added token that is not special (timestamps)
	kindSpecial                  // an added token marked special
)

// tokenizerJSON is the part of a Hugging Face tokenizer.json that Whisper's
// tokenizer uses.
type tokenizerJSON struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	PreTokenizer *struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type   string           `json:"type"`
		Vocab  map[string]int32 `json:"vocab"`
		Merges json.RawMessage  `json:"merges"`
	} `json:"model"`
}

// Load reads a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return t, nil
}

// Parse builds a tokenizer from the contents of a Hugging Face
// tokenizer.json holding a byte-level BPE model with Whisper's added tokens.
func Parse(data []byte) (*Tokenizer, error) {
	var j tokenizerJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if j.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q, want BPE", j.Model.Type)
	}
	if j.PreTokenizer == nil || j.PreTokenizer.Type != "ByteLevel" || j.PreTokenizer.AddPrefixSpace {
		return nil, errors.New("tokenizer.json: want a ByteLevel pre-tokenizer without add_prefix_space")
	}
	if len(j.Model.Vocab) == 0 {
		return nil, errors.New("tokenizer.json: empty vocabulary")
	}

	t := &Tokenizer{added: make(map[string]int32, len(j.AddedTokens))}
	size := 0
	for _, id := range j.Model.Vocab {
		size = max(size, int(id)+1)
	}
	for _, a := range j.AddedTokens {
		size = max(size, int(a.ID)+1)
	}
	const maxVocab = 1 << 22
	if size > maxVocab {
		return nil, fmt.Errorf("tokenizer.json: token id %d too large", size-1)
	}
	t.tokens = make([]token, size)
	vocab := make(map[string]int32, len(j.Model.Vocab))
	for s, id := range j.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer.json: token %q has negative id %d", s, id)
		}
		b, ok := byteLevelDecode(s)
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: vocabulary entry %q (id %d) is not byte-level text", s, id)
		}
		if t.tokens[id].present {
			return nil, fmt.Errorf("tokenizer.json: id %d used twice in the vocabulary", id)
		}
		t.tokens[id] = token{text: b, kind: kindBPE, present: true}
		vocab[s] = id
	}
	for b := 0; b < 256; b++ {
		id, ok := vocab[string(byteRune[b])]
		if !ok {
			return nil, fmt.Errorf("tokenizer.json: vocabulary lacks the byte 0x%02x", b)
		}
		t.byteID[b] = id
	}
	if err := t.parseMerges(j.Model.Merges, vocab); err != nil {
		return nil, err
	}
	for _, a := range j.AddedTokens {
		if a.ID < 0 || a.Content == "" {
			return nil, fmt.Errorf("tokenizer.json: bad added token %q (id %d)", a.Content, a.ID)
		}
		kind := kindAdded
		if a.Special {
			kind = kindSpecial
		}
		// An added token may repeat a vocabulary entry (Whisper's
		// <|endoftext|> is both); the added entry decides how it decodes.
		t.tokens[a.ID] = token{text: []byte(a.Content), kind: kind, present: true}
		t.added[a.Content] = a.ID
		t.addHead[a.Content[0]] = true
		if !slices.Contains(t.addLens, len(a.Content)) {
			t.addLens = append(t.addLens, len(a.Content))
		}
	}
	slices.SortFunc(t.addLens, func(a, b int) int { return b - a })
	if err := t.findSpecials(); err != nil {
		return nil, err
	}
	return t, nil
}

// parseMerges reads merges written either as "a b" strings or as ["a", "b"]
// pairs (newer tokenizer.json files).
func (t *Tokenizer) parseMerges(raw json.RawMessage, vocab map[string]int32) error {
	var pairs [][2]string
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		pairs = make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return fmt.Errorf("tokenizer.json: merge %d %q is not two tokens", i, s)
			}
			pairs[i] = [2]string{a, b}
		}
	} else if err := json.Unmarshal(raw, &pairs); err != nil {
		return fmt.Errorf("tokenizer.json: merges: %w", err)
	}
	t.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		a, okA := vocab[p[0]]
		b, okB := vocab[p[1]]
		m, okM := vocab[p[0]+p[1]]
		if !okA || !okB || !okM {
			return fmt.Errorf("tokenizer.json: merge %d (%q %q) names a token missing from the vocabulary", i, p[0], p[1])
		}
		if _, dup := t.merges[pairKey(a, b)]; dup {
			continue // the first (lowest-ranked) rule wins, as in Hugging Face's BPE
		}
		t.merges[pairKey(a, b)] = merge{rank: int32(i), id: m}
	}
	return nil
}

// findSpecials looks up Whisper's special tokens by their text.
func (t *Tokenizer) findSpecials() error {
	need := func(content string) (int32, error) {
		id, ok := t.added[content]
		if !ok {
			return 0, fmt.Errorf("tokenizer.json: no %s token; is this a Whisper tokenizer?", content)
		}
		return id, nil
	}
	s := &t.special
	var err error
	for _, f := range []struct {
		dst  *int32
		text string
	}{
		{&s.EOT, "<|endoftext|>"},
		{&s.SOT, "<|startoftranscript|>"},
		{&s.Translate, "<|translate|>"},
		{&s.Transcribe, "<|transcribe|>"},
		{&s.StartOfLM, "<|startoflm|>"},
		{&s.StartOfPrev, "<|startofprev|>"},
		{&s.NoTimestamps, "<|notimestamps|>"},
	} {
		if *f.dst, err = need(f.text); err != nil {
			return err
		}
	}
	s.NoSpeech = -1
	if id, ok := t.added["<|nospeech|>"]; ok {
		s.NoSpeech = id
	} else if id, ok := t.added["<|nocaptions|>"]; ok {
		s.NoSpeech = id
	}

	// Timestamps follow <|notimestamps|>. Files that list them must list
	// all 1501 in order; files that do not get them by position, as
	// OpenAI's tokenizer does.
	s.TimestampBegin = s.NoTimestamps + 1
	if id, ok := t.added["<|0.00|>"]; ok {
		s.TimestampBegin = id
		for i := int32(0); i < Timestamps; i++ {
			if got, ok := t.added[formatTimestamp(int64(i)*2)]; !ok || got != id+i {
				return fmt.Errorf("tokenizer.json: timestamp token %s missing or out of order", formatTimestamp(int64(i)*2))
			}
		}
	}
	if n := int(s.TimestampBegin) + Timestamps; n > len(t.tokens) {
		t.tokens = append(t.tokens, make([]token, n-len(t.tokens))...)
	}

	space, err := t.Encode(" ")
	if err != nil || len(space) != 1 {
		return errors.New("tokenizer.json: \" \" is not a single token")
	}
	s.Space = space[0]

	for i, l := range languageTable {
		id, ok := t.added["<|"+l.code+"|>"]
		if !ok {
			// English-only vocabularies have none, those before large-v3
			// stop before <|yue|>; a gap means a corrupt file.
			for _, later := range languageTable[i+1:] {
				if _, ok := t.added["<|"+later.code+"|>"]; ok {
					return fmt.Errorf("tokenizer.json: language token <|%s|> missing but <|%s|> present", l.code, later.code)
				}
			}
			break
		}
		if id != s.SOT+1+int32(i) {
			return fmt.Errorf("tokenizer.json: language token <|%s|> has id %d, want %d", l.code, id, s.SOT+1+int32(i))
		}
		s.Languages = append(s.Languages, Language{Code: l.code, Name: l.name, ID: id})
	}
	return nil
}

// Specials returns the ids of Whisper's special tokens.
func (t *Tokenizer) Specials() Specials {
	s := t.special
	s.Languages = slices.Clone(s.Languages)
	return s
}

// Size is the number of token ids, which is the width of the decoder's
// logits (51865 for multilingual Whisper).
func (t *Tokenizer) Size() int { return len(t.tokens) }

// Multilingual reports whether the vocabulary has language tokens.
func (t *Tokenizer) Multilingual() bool { return len(t.special.Languages) > 0 }

// SOTSequence returns the tokens that start a transcript; see
// Specials.SOTSequence.
func (t *Tokenizer) SOTSequence(language string, task Task, timestamps bool) ([]int32, error) {
	return t.special.SOTSequence(language, task, timestamps)
}

// Encode returns the tokens of text, treating all of it as text: a special
// token's spelling such as "<|en|>" in the input is encoded as the
// characters it is made of, as OpenAI's tokenizer encodes prompts.
func (t *Tokenizer) Encode(text string) ([]int32, error) {
	return t.appendEncode(nil, text, nil)
}

// EncodeSpecial is Encode, except that added tokens spelled out in the text
// ("<|startofprev|>", "<|1.00|>", …) become their ids, as a Hugging Face
// tokenizer does; the longest one wins where several start at one place.
func (t *Tokenizer) EncodeSpecial(text string) ([]int32, error) {
	if !validUTF8(text) {
		return nil, invalidUTF8(text)
	}
	var out []int32
	var s bpeScratch
	start := 0
	for i := 0; i < len(text); i++ {
		if !t.addHead[text[i]] {
			continue
		}
		for _, n := range t.addLens {
			if i+n > len(text) {
				continue
			}
			if id, ok := t.added[text[i:i+n]]; ok {
				out, _ = t.appendEncode(out, text[start:i], &s)
				out = append(out, id)
				start = i + n
				i += n - 1
				break
			}
		}
	}
	out, _ = t.appendEncode(out, text[start:], &s)
	return out, nil
}

func (t *Tokenizer) appendEncode(dst []int32, text string, s *bpeScratch) ([]int32, error) {
	if !validUTF8(text) {
		return nil, invalidUTF8(text)
	}
	if s == nil {
		s = new(bpeScratch)
	}
	for i := 0; i < len(text); {
		end := pieceEnd(text, i)
		dst = t.appendBPE(dst, text[i:end], s)
		i = end
	}
	return dst, nil
}

// DecodeOptions says how Decode renders the tokens that are not text.
type DecodeOptions struct {
	// Special renders special tokens (<|startoftranscript|>, <|en|>,
	// <|endoftext|>, …) as their text instead of dropping them.
	Special bool
	// Timestamps renders timestamp tokens as <|1.24|> instead of dropping
	// them.
	Timestamps bool
	// TimeOffset is added to rendered timestamps, in seconds; it is rounded
	// to 0.01 s.
	TimeOffset float64
	// CleanUp applies Hugging Face's clean_up_tokenization (" ." → ".",
	// " n't" → "n't", …), which Whisper's tokenizer_config.json enables and
	// transformers.js therefore applies; OpenAI's decoder does not.
	CleanUp bool
}

// Decode returns the text of ids, dropping special and timestamp tokens.
// Byte sequences that are not valid UTF-8 (a character cut between tokens)
// become U+FFFD, one per maximal invalid subsequence.
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	return t.DecodeWith(ids, DecodeOptions{})
}

// DecodeWith returns the text of ids, rendering special and timestamp
// tokens as opts asks. With opts.Timestamps and opts.CleanUp it matches
// transformers.js's decode(ids, {skip_special_tokens: true}).
func (t *Tokenizer) DecodeWith(ids []int32, opts DecodeOptions) (string, error) {
	var out strings.Builder
	var pending []byte // bytes of consecutive BPE tokens, not yet UTF-8 checked
	flush := func() {
		appendLossy(&out, pending)
		pending = pending[:0]
	}
	offset := roundHundredths(opts.TimeOffset)
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) {
			return "", fmt.Errorf("decode: token id %d out of range [0, %d)", id, len(t.tokens))
		}
		if id >= t.special.TimestampBegin && id < t.special.TimestampBegin+Timestamps {
			if opts.Timestamps {
				flush()
				out.WriteString(formatTimestamp(int64(id-t.special.TimestampBegin)*2 + offset))
			}
			continue
		}
		tok := &t.tokens[id]
		switch {
		case !tok.present:
			return "", fmt.Errorf("decode: token id %d is not in the vocabulary", id)
		case tok.kind == kindBPE:
			pending = append(pending, tok.text...)
		case tok.kind == kindSpecial && !opts.Special:
		default:
			// Added tokens are rendered apart from the byte-level text
			// around them, as Hugging Face's decoders do.
			flush()
			out.Write(tok.text)
		}
	}
	flush()
	if opts.CleanUp {
		return cleanUp(out.String()), nil
	}
	return out.String(), nil
}

// NonSpeechTokens returns OpenAI's default suppress list (its "-1"): tokens
// of symbols that mark speaker tags or non-speech annotations (♪, [, (, …),
// while keeping ordinary punctuation; " -" and " '" are in it so that they
// are allowed only inside words.
func (t *Tokenizer) NonSpeechTokens() []int32 {
	symbols := strings.Split(`" # ( ) * + / : ; < = > @ [ \ ] ^ _ `+"`"+` { | } ~ 「 」 『 』`, " ")
	symbols = append(symbols, strings.Fields(`<< >> <<< >>> -- --- -( -[ (' (" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪`)...)
	// Musical symbols (U+2640–U+267F) may take several tokens; their first
	// token is shared by the block, and safe to suppress.
	misc := strings.Split("♩ ♪ ♫ ♬ ♭ ♮ ♯", " ")

	set := map[int32]bool{}
	for _, s := range []string{" -", " '"} {
		ids, _ := t.Encode(s)
		set[ids[0]] = true
	}
	add := func(sym string, first bool) {
		for _, s := range []string{sym, " " + sym} {
			ids, _ := t.Encode(s)
			if len(ids) == 1 || (first && len(ids) > 0) {
				set[ids[0]] = true
			}
		}
	}
	for _, s := range symbols {
		add(s, false)
	}
	for _, s := range misc {
		add(s, true)
	}
	out := make([]int32, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// formatTimestamp renders a time in hundredths of a second as <|s.cc|>.
func formatTimestamp(hundredths int64) string {
	sign := ""
	if hundredths < 0 {
		sign, hundredths = "-", -hundredths
	}
	return fmt.Sprintf("<|%s%d.%02d|>", sign, hundredths/100, hundredths%100)
}
