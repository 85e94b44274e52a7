package g2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode"

	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// letterBackend is a fast stand-in for espeak-ng: each letter becomes one
// token ('a' or, for a capital, 'ɑ'), spaces stay, the rest vanishes.
type letterBackend struct{ calls int }

func (l *letterBackend) Phonemize(text, _ string) ([]string, error) {
	l.calls++
	out := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsUpper(r):
			return 'ɑ'
		case unicode.IsLetter(r):
			return 'a'
		case r == ' ':
			return ' '
		}
		return -1
	}, text)
	if strings.TrimSpace(out) == "" {
		return nil, nil
	}
	return []string{out}, nil
}

// collect runs the chunker over r and returns the chunks and the error
// that ended the stream (nil at a clean end).
func collect(t testing.TB, c *Chunker, ctx context.Context, r io.Reader) ([]Chunk, error) {
	t.Helper()
	var out []Chunk
	for ch, err := range c.Chunks(ctx, r) {
		if err != nil {
			return out, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// checkChunks verifies the invariants every chunk stream keeps.
func checkChunks(t testing.TB, chunks []Chunk, limit int) {
	t.Helper()
	for i, ch := range chunks {
		if ch.Index != i {
			t.Fatalf("chunk %d has Index %d", i, ch.Index)
		}
		if ch.Text == "" || ch.Text != jsTrim(ch.Text) {
			t.Fatalf("chunk %d text %q is empty or untrimmed", i, ch.Text)
		}
		if ch.Tokens() < 1 || ch.Tokens() > limit {
			t.Fatalf("chunk %d (%q) has %d tokens, limit %d", i, ch.Text, ch.Tokens(), limit)
		}
		ids, dropped, err := vocab.Encode(ch.Phonemes)
		if err != nil || !slices.Equal(ids, ch.IDs) || string(dropped) != string(ch.Dropped) {
			t.Fatalf("chunk %d ids/dropped do not encode its phonemes %q: %v", i, ch.Phonemes, err)
		}
	}
}

func TestChunksSentencesLikeKokoroJS(t *testing.T) {
	g, err := New(engine(t), AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	// The three golden sentences, in one text: kokoro-js's stream() yields
	// one utterance per sentence, with these phonemes.
	var text []string
	for _, c := range kokoroJSCases[:3] {
		text = append(text, c.text)
	}
	chunks, err := collect(t, &Chunker{G2P: g}, context.Background(), strings.NewReader(strings.Join(text, " ")))
	if err != nil {
		t.Fatal(err)
	}
	checkChunks(t, chunks, vocab.MaxPhonemes)
	if len(chunks) != 3 {
		t.Fatalf("got %d chunks, want 3: %+v", len(chunks), chunks)
	}
	for i, ch := range chunks {
		if ch.Text != kokoroJSCases[i].text || ch.Phonemes != kokoroJSCases[i].a {
			t.Errorf("chunk %d = %q → %q, want %q → %q", i, ch.Text, ch.Phonemes, kokoroJSCases[i].text, kokoroJSCases[i].a)
		}
	}
	// The hello ids of ../shared/golden/kokoro/README.md.
	if want := []int64{0, 50, 83, 54, 156, 57, 135, 16, 65, 156, 87, 158, 54, 46, 4, 0}; !slices.Equal(chunks[0].IDs, want) {
		t.Errorf("hello ids %v, want %v", chunks[0].IDs, want)
	}
}

func TestChunksLongSentence(t *testing.T) {
	g, err := New(engine(t), AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	clause := "the cat sat on the mat near the door"
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "%s number %d, ", clause, i+1)
	}
	b.WriteString("and then it slept.")
	text := b.String()
	for _, limit := range []int{vocab.MaxPhonemes, 120} {
		chunks, err := collect(t, &Chunker{G2P: g, MaxTokens: limit}, context.Background(), strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		checkChunks(t, chunks, limit)
		if len(chunks) < 2 {
			t.Fatalf("limit %d: %d chunks, want the sentence cut", limit, len(chunks))
		}
		var texts []string
		for i, ch := range chunks {
			texts = append(texts, ch.Text)
			if i < len(chunks)-1 && !strings.HasSuffix(ch.Text, ",") {
				t.Errorf("limit %d: chunk %d %q is not cut after a comma", limit, i, ch.Text)
			}
		}
		if got := strings.Join(texts, " "); got != strings.TrimSpace(text) {
			t.Errorf("limit %d: chunks do not reassemble the text:\n%s", limit, got)
		}
	}
}

func TestChunksCutBetweenWords(t *testing.T) {
	g, err := New(&letterBackend{}, AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("word ", 50) + "end"
	chunks, err := collect(t, &Chunker{G2P: g, MaxTokens: 23}, context.Background(), strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	checkChunks(t, chunks, 23)
	var words []string
	for _, ch := range chunks {
		if ch.Tokens() < 19 && ch.Index < len(chunks)-1 {
			t.Errorf("chunk %d %q holds %d tokens: not the longest run of words that fits", ch.Index, ch.Text, ch.Tokens())
		}
		words = append(words, strings.Fields(ch.Text)...)
	}
	if !slices.Equal(words, strings.Fields(text)) {
		t.Errorf("words lost or cut: %q", words)
	}
}

func TestChunksBadInput(t *testing.T) {
	g, err := New(&letterBackend{}, AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	c := &Chunker{G2P: g}
	for _, tc := range []struct {
		name, text string
		want       error
		chunks     int
	}{
		{"empty", "", ErrNoSpeech, 0},
		{"whitespace", " \n\t\r\n ", ErrNoSpeech, 0},
		{"punctuation", "... ?! -- «»", ErrNoSpeech, 0},
		{"digits only, no letters", "42.", ErrNoSpeech, 0},
		{"invalid utf-8", "Hello. Then \xff broke.", ErrInvalidUTF8, 1},
		{"truncated utf-8 at end", "Hello \xe2\x82", ErrInvalidUTF8, 0},
		{"nul bytes", "a\x00b.", nil, 1},
		{"pause line between sentences", "Hello.\n...\nWorld.", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.text), iotest.OneByteReader(strings.NewReader(tc.text))} {
				chunks, err := collect(t, c, context.Background(), r)
				if !errors.Is(err, tc.want) || len(chunks) != tc.chunks {
					t.Errorf("%d chunks, err %v; want %d chunks, err %v", len(chunks), err, tc.chunks, tc.want)
				}
			}
		})
	}
	_, err = collect(t, c, context.Background(), strings.NewReader("ok \xc3\x28"))
	if err == nil || !strings.Contains(err.Error(), "byte 3") {
		t.Errorf("invalid UTF-8 error %v does not give the offset 3", err)
	}
	boom := errors.New("disk on fire")
	_, err = collect(t, c, context.Background(), io.MultiReader(strings.NewReader("Hello. "), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Errorf("read error: got %v", err)
	}
	if _, err := collect(t, &Chunker{}, context.Background(), strings.NewReader("hi")); err == nil {
		t.Error("a Chunker without G2P yielded no error")
	}
}

func TestChunksDroppedCharacters(t *testing.T) {
	g, err := New(engine(t), AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := collect(t, &Chunker{G2P: g}, context.Background(), strings.NewReader("It was (mostly) fine."))
	if err != nil {
		t.Fatal(err)
	}
	// kokoro-js turns brackets into «», which are not in the vocabulary.
	if len(chunks) != 1 || string(chunks[0].Dropped) != "«»" {
		t.Fatalf("chunks %+v: want one with « and » dropped", chunks)
	}
}

func TestChunksCancel(t *testing.T) {
	be := &letterBackend{}
	g, err := New(be, AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("One sentence here. ", 1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range (&Chunker{G2P: g}).Chunks(ctx, strings.NewReader(text)) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 3 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) || n != 3 {
		t.Errorf("after cancel: %d chunks, err %v; want 3 and context.Canceled", n, last)
	}

	// Breaking out of the loop stops the work at once.
	be.calls = 0
	for range (&Chunker{G2P: g}).Chunks(context.Background(), strings.NewReader(text)) {
		break
	}
	if be.calls != 1 {
		t.Errorf("consumer stopped after one chunk, but the backend ran %d times", be.calls)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestChunksStreamLargeText(t *testing.T) {
	g, err := New(&letterBackend{}, AmericanEnglish)
	if err != nil {
		t.Fatal(err)
	}
	sentences := []string{"The quick brown fox jumps over the lazy dog.", "Is it really warm outside today?", "Yes!", "Well, it depends; mostly it is, he said."}
	var b strings.Builder
	for i := 0; b.Len() < 100<<10; i++ {
		b.WriteString(sentences[i%len(sentences)])
		b.WriteByte(" \n"[i%7/6])
	}
	for _, tc := range []struct {
		name, text string
	}{
		{"sentences", b.String()},
		// No sentence end at all: the chunker must cut by itself.
		{"one endless sentence", strings.Repeat("and on ", 100<<10/7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := &countingReader{r: strings.NewReader(tc.text)}
			var chunks []Chunk
			readAtFirst := -1
			for ch, err := range (&Chunker{G2P: g}).Chunks(context.Background(), cr) {
				if err != nil {
					t.Fatal(err)
				}
				if readAtFirst < 0 {
					readAtFirst = cr.n
				}
				chunks = append(chunks, ch)
			}
			checkChunks(t, chunks, vocab.MaxPhonemes)
			// Streaming: the first chunk leaves before the reader is drained.
			if readAtFirst > maxPending+2*readBlock {
				t.Errorf("first chunk after reading %d of %d bytes", readAtFirst, len(tc.text))
			}
			var words []string
			for _, ch := range chunks {
				words = append(words, strings.Fields(ch.Text)...)
			}
			if !slices.Equal(words, strings.Fields(tc.text)) {
				t.Errorf("chunks lose or reorder words")
			}
		})
	}
}

func FuzzChunker(f *testing.F) {
	for _, s := range []string{"Hello world. How are you?", "", "...", "a, b; c: d. E! f?", "\xff", strings.Repeat("x ", 40), "Dr. X. 1. Y\n\nZ"} {
		f.Add(s, uint8(12))
	}
	f.Fuzz(func(t *testing.T, text string, limit uint8) {
		g, err := New(&letterBackend{}, AmericanEnglish)
		if err != nil {
			t.Fatal(err)
		}
		max := int(limit%64) + 8
		chunks, err := collect(t, &Chunker{G2P: g, MaxTokens: max}, context.Background(), iotest.HalfReader(strings.NewReader(text)))
		switch {
		case err == nil, errors.Is(err, ErrNoSpeech), errors.Is(err, ErrInvalidUTF8):
		default:
			t.Fatalf("unexpected error %v", err)
		}
		if errors.Is(err, ErrNoSpeech) && len(chunks) != 0 {
			t.Fatalf("ErrNoSpeech after %d chunks", len(chunks))
		}
		checkChunks(t, chunks, max)
		if err != nil {
			return
		}
		// The chunks hold the input's text in order, leaving out only
		// pieces without letters (the sentence splitter, like kokoro-js's,
		// may cut a run such as "D!!000000 x" after its "!!"); a word too
		// long for one chunk is there, cut into pieces.
		var out strings.Builder
		for _, ch := range chunks {
			out.WriteString(ch.Text)
		}
		if got, want := keep(out.String(), unicode.IsLetter), keep(text, unicode.IsLetter); got != want {
			t.Fatalf("letters %q, want %q", got, want)
		}
		notSpace := func(r rune) bool { return !jsSpace(r) }
		if !isSubsequence(keep(out.String(), notSpace), keep(text, notSpace)) {
			t.Fatalf("chunks %q are not a subsequence of the input", out.String())
		}
	})
}

// keep returns the runes of s that satisfy f.
func keep(s string, f func(rune) bool) string {
	return strings.Map(func(r rune) rune {
		if f(r) {
			return r
		}
		return -1
	}, s)
}

// isSubsequence reports whether sub's runes appear in s in order.
func isSubsequence(sub, s string) bool {
	rs := []rune(s)
	j := 0
	for _, r := range sub {
		for j < len(rs) && rs[j] != r {
			j++
		}
		if j == len(rs) {
			return false
		}
		j++
	}
	return true
}

func BenchmarkChunker(b *testing.B) {
	g, err := New(engine(b), AmericanEnglish)
	if err != nil {
		b.Fatal(err)
	}
	var text strings.Builder
	for i := range 20 {
		fmt.Fprintf(&text, "Sentence number %d has a few words, some numbers like %d.5, and ends here. ", i, i*37)
	}
	b.SetBytes(int64(text.Len()))
	for b.Loop() {
		n := 0
		for _, err := range (&Chunker{G2P: g}).ChunkString(context.Background(), text.String()) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 20 {
			b.Fatalf("%d chunks", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*20), "µs/sentence")
}

// BenchmarkChunk100kB streams 100 kB of prose through the real espeak-ng
// front-end, reporting the time per chunk and the peak heap in use (which
// stays flat however long the text: the reader is consumed in blocks).
func BenchmarkChunk100kB(b *testing.B) {
	g, err := New(engine(b), AmericanEnglish)
	if err != nil {
		b.Fatal(err)
	}
	paragraph := "The quick brown fox jumps over the lazy dog, and then it runs away quickly; nobody saw it. " +
		"Is it really 42 degrees outside today? Dr. Smith paid $5.50 at 10:30.\n"
	var peak uint64
	var ms runtime.MemStats
	chunks := 0
	b.SetBytes(100 << 10)
	for b.Loop() {
		r := io.LimitReader(&repeatReader{s: paragraph}, 100<<10)
		for _, err := range (&Chunker{G2P: g}).Chunks(context.Background(), r) {
			if err != nil {
				b.Fatal(err)
			}
			if chunks++; chunks%50 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(chunks), "µs/chunk")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// repeatReader repeats s for ever.
type repeatReader struct {
	s   string
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}
