package g2p

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// The long words of issue 15: each alone ended `say` with "word too long".
const (
	commitHash  = "3f786850e387550fdab836ed7e6dc881de23001b"
	thirtyDigit = "123456789012345678901234567890"
	// titinStart is the first 600 letters of titin's chemical name.
	titinStart = "Methionylthreonylthreonylglutaminylarginyltyrosylglutamylserylleucylphenylalanylalanylglutaminylleucyllysylglutamylarginyllysylglutamylglycylalanylphenylalanylvalylprolylphenylalanylvalylthreonylleucylglycylaspartylprolylglycylisoleucylglutamylglutaminylserylleucyllysylisoleucylaspartylthreonylleucylisoleucylglutamylalanylglycylalanylaspartylalanylleucylglutamylleucylglycylisoleucylprolylphenylalanylserylaspartylprolylleucylalanylaspartylglycylprolylthreonylisoleucylglutaminylasparaginylalanylthreonylleucylarginylalanylphenylalanylalanylalanylglycylvalylthreonylprolylalanylglutaminylcysteinylphenylalanylglutamylmethionylleucylalanylleucylisoleucylarginylglutaminyllysylhistidylprolylthreonylisoleucylprolylisoleucylglycylleucylleucylmethionyltyrosylalanylasparaginylleucylvalylphenylalanylasparaginyllysylglycylisoleucylaspartylglutamylphenylalanyltyrosylalanylglutaminylcysteinylglutamyllysylvalylglycylvalylaspartylserylvalylleucylvalylalanylaspartylvalylprolylvalylglutaminylglutamylserylalanylprolylphenylalanylarginylglutaminylalanylalanylleucylarginylhistidylasparaginylvalylalanylprolylisoleucylphenylalanylisoleucylcysteinylprolylprolylaspartylalanylaspartylaspartylaspartylleucylleucylarginylglutaminylisoleucylalanylseryltyrosylglycylarginylglycyltyrosylthreonyltyrosylleucylleucylserylarginylalanylglycylvalylthreonylglycylalanylglutamylasparaginylarginylalanylalanylleucylprolylleucylasparaginylhistidylleucylvalylalanyllysylleucyllysylglutamyltyrosylasparaginylalanylalanylprolylprolylleucylglutaminylglycylphenylalanylglycylisoleucylserylalanylprolylaspartylglutaminylvalyllysylalanylalanylisoleucylaspartylalanylglycylalanylalanylglycylalanylisoleucylserylglycylserylalanylisoleucylvalyllysylisoleucylisoleucylglutamylglutaminylhistidylasparaginylisoleucylglutamylprolylglutamyllysylmethionylleucylalanylalanylleucyllysylvalylphenylalanylvalylglutaminylprolylmethionyllysylalanylalanylthreonylarginylserine"
)

func TestWordPieces(t *testing.T) {
	// piece abbreviates a piece: "3f78," is spelled with a pause after
	// it, "=3f78" spelled without one, anything else read as it is.
	piece := func(s string) word {
		switch {
		case strings.HasPrefix(s, "="):
			return word{text: s[1:], spell: true}
		case strings.HasSuffix(s, ",") && len(s) > 1:
			return word{text: s[:len(s)-1], spell: true, pause: true}
		}
		return word{text: s}
	}
	for _, c := range []struct {
		in   word
		want []string
	}{
		{word{text: commitHash}, []string{"3f78,", "6850,", "e387,", "550f,", "dab8,", "36ed,", "7e6d,", "c881,", "de23,", "=001b"}},
		{word{text: commitHash + "."}, []string{"3f78,", "6850,", "e387,", "550f,", "dab8,", "36ed,", "7e6d,", "c881,", "de23,", "=001b."}},
		{word{text: thirtyDigit}, []string{"123,", "456,", "789,", "012,", "345,", "678,", "901,", "234,", "567,", "=890"}},
		{word{text: "12345678901"}, []string{"123,", "456,", "789,", "=01"}},
		{word{text: "2-(4-isobutylphenyl)propanoic"}, []string{"2-(", "4-", "isobutylphenyl)", "propanoic"}},
		{word{text: "https://example.com/a/b"}, []string{"https://", "example.", "com/", "a/", "b"}},
		{word{text: "fooBarBaz123"}, []string{"foo", "Bar", "Baz", "123"}},
		{word{text: "#123456"}, []string{"#", "123456"}},
		{word{text: "methionylthreonylthreonylglutaminyl"}, []string{"methionyl", "threonyl", "threonyl", "glutaminyl"}},
		{word{text: "Pneumonoultramicroscopicsilicovolcanoconiosis!"}, []string{"Pneumonoul", "tramicros", "copicsilico", "volcanoconio", "sis!"}},
		// Nothing left to cut at: halves; a spelled group stays spelled
		// and its pause goes with its end.
		{word{text: "thermometer"}, []string{"therm", "ometer"}},
		{word{text: "----"}, []string{"--", "--"}},
		{word{text: "dab8", spell: true, pause: true}, []string{"=da", "b8,"}},
		{word{text: "00"}, []string{"=00"}},
		{word{text: "x"}, nil},
		{word{text: "😀"}, nil},
	} {
		var want []word
		for _, s := range c.want {
			w := piece(s)
			w.of = c.in.text
			want = append(want, w)
		}
		if got := c.in.pieces(); !slices.Equal(got, want) {
			t.Errorf("%+v.pieces()\n got %+v\nwant %+v", c.in, got, want)
		}
	}
}

func TestWordSpoken(t *testing.T) {
	for _, c := range []struct {
		in   word
		want string
	}{
		{word{text: "3f78", spell: true, pause: true}, "3 f 7 8,"},
		{word{text: "DAB8", spell: true}, "d eh b 8"}, // a lone "a" would be the article
		{word{text: "001b.", spell: true}, "0 0 1 b."},
		{word{text: "Alpha"}, "Alpha"},
	} {
		if got := c.in.spoken(); got != c.want {
			t.Errorf("%+v.spoken() = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzWordPieces: cutting any word again and again ends in single
// characters, every cut shortens a piece or spells it, and the pieces
// hold the word's text in order.
func FuzzWordPieces(f *testing.F) {
	for _, s := range []string{commitHash, thirtyDigit + ".", "2-(4-isobutylphenyl)propanoic", "fooBAR99x", "a", "——", "Ünïcödé١٢٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsFunc(s, jsSpace) || s == "" {
			return
		}
		var leaves []string
		var cut func(w word, depth int)
		cut = func(w word, depth int) {
			if depth > 4*len(s)+8 {
				t.Fatalf("cutting %q does not end", s)
			}
			p := w.pieces()
			if p == nil {
				if utf8.RuneCountInString(w.text) > 1 {
					t.Fatalf("%+v: no pieces, but more than one character", w)
				}
				leaves = append(leaves, w.text)
				return
			}
			for _, q := range p {
				n, m := utf8.RuneCountInString(q.text), utf8.RuneCountInString(w.text)
				if q.text == "" || n > m || n == m && (w.spell || !q.spell) || q.of != s {
					t.Fatalf("%+v cut into %+v: no progress or lost origin", w, p)
				}
				cut(q, depth+1)
			}
		}
		cut(word{text: s}, 0)
		if got := strings.Join(leaves, ""); got != s {
			t.Fatalf("pieces %q do not make %q", leaves, s)
		}
	})
}

// longBackend is letterBackend, except that '¤' reads as 40 tokens:
// a character too long for any small chunk.
type longBackend struct{ letterBackend }

func (l *longBackend) Phonemize(text, voice string) ([]string, error) {
	out, err := l.letterBackend.Phonemize(strings.ReplaceAll(text, "¤", strings.Repeat("x", 40)), voice)
	return out, err
}

func TestChunksCutLongWords(t *testing.T) {
	g, err := New(&longBackend{}, AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		limit      int
		want       []string // chunk texts
		warned     []string // characters left out
	}{
		{"long word cut in halves", "tiny enormousword tiny", 5,
			[]string{"tiny", "eno", "rmo", "usw", "ord", "tiny"}, nil},
		// The words before a long word share its first chunk.
		{"syllables", "the " + "methionylthreonylthreonylglutaminyl" + " end", 20,
			[]string{"the methionyl", "threonyl threonyl", "glutaminyl end"}, nil},
		{"character too long", "one ¤ two", 20, []string{"one two"}, []string{"¤"}},
		{"inside a word", "one x¤y two", 20, []string{"one x y two"}, []string{"¤"}},
		{"several", "¤ ¤ a¤", 20, []string{"a"}, []string{"¤", "¤", "¤"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			chunks, err := collect(t, &Chunker{G2P: g, MaxTokens: c.limit, Log: zap.New(core)}, context.Background(), strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			checkChunks(t, chunks, c.limit)
			var texts []string
			for _, ch := range chunks {
				texts = append(texts, ch.Text)
			}
			if !slices.Equal(texts, c.want) {
				t.Errorf("chunks %q, want %q", texts, c.want)
			}
			var warned []string
			for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).All() {
				warned = append(warned, e.ContextMap()["text"].(string))
			}
			if !slices.Equal(warned, c.warned) {
				t.Errorf("warnings for %q, want %q", warned, c.warned)
			}
		})
	}
	// Nothing sayable left: no speech, and the warning says why.
	core, logs := observer.New(zapcore.WarnLevel)
	_, err = collect(t, &Chunker{G2P: g, MaxTokens: 20, Log: zap.New(core)}, context.Background(), strings.NewReader("¤."))
	if err != ErrNoSpeech || logs.Len() != 1 {
		t.Errorf("a lone unsayable character: err %v, %d warnings; want ErrNoSpeech and one", err, logs.Len())
	}
}

// TestChunksIssue15LongWords runs the issue's texts through espeak-ng at
// say's default chunk limit and at the model's: each is said in full,
// hex and digit strings in spelled groups, and nothing fails.
func TestChunksIssue15LongWords(t *testing.T) {
	g, err := New(engine(t), AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		limit      int
		wantText   string // in the chunks' texts, joined by spaces
		wantPh     string // in the chunks' phonemes, joined by spaces
	}{
		{"commit hash", "Commit " + commitHash + " was merged.", 200,
			"Commit 3f78 6850 e387 550f dab8 36ed 7e6d c881 de23 001b was merged.",
			"θɹˈiː ˈɛf sˈɛvən ˈeɪt, sˈɪks ˈeɪt fˈaɪv zˈiəɹoʊ, ˈiː θɹˈiː ˈeɪt sˈɛvən"},
		{"commit hash in a long sentence", strings.Repeat("word ", 150) + commitHash + ".", 200,
			"word word 3f78 6850 e387 550f dab8 36ed 7e6d c881 de23 001b.", "dˈiː ˈeɪ bˈiː ˈeɪt"},
		{"30 digits", "The number is " + thirtyDigit + ".", 200,
			"The number is 123 456 789 012 345 678 901 234 567 890.",
			"wˈʌn tˈuː θɹˈiː, fˈoːɹ fˈaɪv sˈɪks,"},
		// Within the model's own limit the hash reads as espeak-ng reads
		// it, as kokoro-js would.
		{"commit hash at 510", "Commit " + commitHash + " was merged.", vocab.MaxPhonemes,
			"Commit " + commitHash + " was merged.", "θɹˈiː ˈɛf sˈɛvən hˈʌndɹɪd"},
		{"chemical name", "Titin begins " + titinStart + ".", 200, "Titin begins Methionyl threonyl", "θɹɪ"},
		{"chemical name at 510", "Titin begins " + titinStart + ".", vocab.MaxPhonemes, "Titin begins Methionyl threonyl", "θɹɪ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.WarnLevel)
			chunks, err := collect(t, &Chunker{G2P: g, MaxTokens: c.limit, Log: zap.New(core)}, context.Background(), strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			checkChunks(t, chunks, c.limit)
			if logs.Len() != 0 {
				t.Errorf("warnings: %v", logs.All())
			}
			var texts, phs []string
			for _, ch := range chunks {
				texts = append(texts, ch.Text)
				phs = append(phs, ch.Phonemes)
			}
			text, ph := strings.Join(texts, " "), strings.Join(phs, " ")
			if !strings.Contains(text, c.wantText) || !strings.Contains(ph, c.wantPh) {
				t.Errorf("texts %q\nphonemes %q\nwant %q and %q in them", texts, phs, c.wantText, c.wantPh)
			}
			letters := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
			if keep(text, letters) != keep(c.text, letters) {
				t.Errorf("chunks lose text: %q", texts)
			}
		})
	}
}
