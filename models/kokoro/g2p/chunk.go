package g2p

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/tensorforge/forge/models/kokoro/vocab"
)

// ErrNoSpeech reports input that holds nothing to say: empty text,
// whitespace, or punctuation alone. It is the only item of such a
// stream; match it with errors.Is.
var ErrNoSpeech = errors.New("g2p: no speakable text")

// Chunk is one utterance for the model: a sentence, or the part of a long
// sentence that fits the model's context.
type Chunk struct {
	Index    int     // position in the stream, from 0
	Text     string  // the source text, trimmed; a word cut into pieces shows them separated by spaces
	Phonemes string  // the Kokoro phoneme string of Text
	IDs      []int64 // model input ids: vocab.Pad, one id per phoneme, vocab.Pad
	Dropped  []rune  // phoneme characters outside the vocabulary, left out of IDs
}

// Tokens returns the number of phoneme tokens, pads excluded; it picks the
// voice's style row.
func (c Chunk) Tokens() int { return len(c.IDs) - 2 }

// Chunker cuts text into chunks the model can take one at a time: it
// splits at sentence ends as kokoro-js's stream() does (TextSplitterStream)
// and phonemises each sentence; a sentence whose phonemes exceed MaxTokens
// is cut after clause punctuation (, ; : and the like, followed by a
// space), and a clause still too long between words. A word too long
// for a chunk of its own (a commit hash, a 30-digit number, a chemical
// name) is cut into pieces that are packed like words: hex and digit
// strings are read character by character in groups ("3f78, 6850, …"),
// anything else is cut after punctuation, between letters and digits,
// between syllables, or in halves. A single character too long for a
// chunk is left out with a warning on Log; one word never fails the
// text. Text that produces no phonemes but punctuation (a lone "..."
// line) is skipped: it would be silence.
//
// Memory stays bounded whatever the input's length: the reader is
// consumed in blocks, and text that runs for more than maxPending
// characters without a sentence end is cut at its last space.
type Chunker struct {
	// G2P phonemises each chunk; it fixes the language.
	G2P *G2P
	// MaxTokens is the most phoneme tokens one chunk may hold, pads
	// excluded; 0 means vocab.MaxPhonemes (510), the model's limit.
	MaxTokens int
	// Log receives a warning for each piece of text left out because it
	// cannot be said within MaxTokens, and at debug level each word cut
	// into pieces; nil logs nothing.
	Log *zap.Logger
}

const (
	// readBlock is how many bytes the chunker reads at a time.
	readBlock = 4096
	// maxPending is how many characters may wait for a sentence end before
	// the chunker cuts at the last space: far above any sentence the model
	// can take (510 phoneme tokens is roughly 400 characters of English).
	maxPending = 4096
)

// ChunkString chunks text held in memory; see Chunks.
func (c *Chunker) ChunkString(ctx context.Context, text string) iter.Seq2[Chunk, error] {
	return c.Chunks(ctx, strings.NewReader(text))
}

// Chunks reads text from r and yields its chunks in order, each as soon as
// its sentence is complete, so synthesis can start before the input ends.
// Iteration stops after the first error, which is yielded with a zero
// Chunk: invalid UTF-8 (ErrInvalidUTF8, with the byte offset), a read
// error, a cancelled ctx, a phonemiser failure, or — when the whole input
// yields no chunk — ErrNoSpeech.
func (c *Chunker) Chunks(ctx context.Context, r io.Reader) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		if c.G2P == nil {
			yield(Chunk{}, errors.New("g2p: Chunker has no G2P"))
			return
		}
		s := chunkStream{c: c, ctx: ctx, yield: yield}
		s.run(r)
	}
}

// chunkStream is the state of one Chunks iteration.
type chunkStream struct {
	c        *Chunker
	ctx      context.Context
	yield    func(Chunk, error) bool
	split    sentenceSplitter
	next     int  // index of the next chunk
	stopped  bool // the consumer stopped, or an error was yielded
	sentence []string
}

// fail yields err and stops the stream.
func (s *chunkStream) fail(err error) {
	if !s.stopped {
		s.stopped = true
		s.yield(Chunk{}, err)
	}
}

func (s *chunkStream) run(r io.Reader) {
	buf := make([]byte, readBlock)
	carry := 0  // bytes of an incomplete UTF-8 sequence kept at buf's start
	offset := 0 // input offset of buf[0]
	for !s.stopped {
		if err := s.ctx.Err(); err != nil {
			s.fail(fmt.Errorf("g2p: chunking: %w", err))
			return
		}
		n, rerr := r.Read(buf[carry:])
		n += carry
		eof := errors.Is(rerr, io.EOF)
		if rerr != nil && !eof {
			s.fail(fmt.Errorf("g2p: reading text: %w", rerr))
			return
		}
		valid, bad := validPrefix(buf[:n], eof)
		// Sentences completed before a bad byte still go out, so what is
		// yielded does not depend on how the reader splits its input.
		s.split.push(string(buf[:valid]), s.queue)
		s.drain()
		if bad {
			s.fail(fmt.Errorf("%w at byte %d", ErrInvalidUTF8, offset+valid))
			return
		}
		if s.split.pending() > maxPending && !s.stopped {
			s.forceCut()
			s.drain()
		}
		carry = copy(buf, buf[valid:n])
		offset += valid
		if eof {
			break
		}
	}
	if s.stopped {
		return
	}
	s.split.flush(s.queue)
	s.drain()
	if !s.stopped && s.next == 0 {
		s.fail(ErrNoSpeech)
	}
}

// validPrefix returns how many leading bytes of b are complete, valid
// UTF-8 and whether an invalid sequence follows them. An incomplete
// sequence at the end is not invalid unless the input has ended.
func validPrefix(b []byte, eof bool) (int, bool) {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			if !eof && !utf8.FullRune(b[i:]) {
				return i, false
			}
			return i, true
		}
		i += size
	}
	return i, false
}

// queue collects a sentence from the splitter.
func (s *chunkStream) queue(sentence string) { s.sentence = append(s.sentence, sentence) }

// drain chunks and yields the queued sentences.
func (s *chunkStream) drain() {
	for len(s.sentence) > 0 && !s.stopped {
		sentence := s.sentence[0]
		s.sentence = s.sentence[1:]
		if err := s.chunkSentence(sentence); err != nil {
			s.fail(err)
		}
	}
	s.sentence = s.sentence[:0]
}

// forceCut ends a sentence at the last whitespace of an over-long buffer
// (or at its end if it holds none) so the buffer stays bounded.
func (s *chunkStream) forceCut() {
	b := s.split.buf
	cut := len(b)
	for i := len(b) - 1; i > 0; i-- {
		if jsSpace(b[i]) {
			cut = i
			break
		}
	}
	if t := jsTrim(string(b[:cut])); t != "" {
		s.queue(t)
	}
	s.split.buf = append(b[:0], b[cut:]...)
}

// log returns the logger in force.
func (c *Chunker) log() *zap.Logger {
	if c.Log != nil {
		return c.Log
	}
	return zap.NewNop()
}

// limit is the token limit in force.
func (c *Chunker) limit() int {
	if c.MaxTokens > 0 {
		return c.MaxTokens
	}
	return vocab.MaxPhonemes
}

// chunkSentence phonemises a sentence and emits it as one chunk, or cuts
// it at clauses, then words, until every piece fits.
func (s *chunkStream) chunkSentence(text string) error {
	ph, n, err := s.phonemize(text)
	if err != nil {
		return err
	}
	if n <= s.c.limit() {
		return s.emit(text, ph)
	}
	clauses := splitClauses(text)
	if len(clauses) == 1 {
		return s.chunkWords(text)
	}
	// Pack whole clauses greedily. A clause's phonemes do not depend on its
	// neighbours (kokoro-js phonemises the text between punctuation runs on
	// its own), so the sum of clause counts predicts a pack's count; each
	// pack is still re-phonemised and checked.
	counts := make([]int, len(clauses))
	for i, cl := range clauses {
		if _, counts[i], err = s.phonemize(cl); err != nil {
			return err
		}
	}
	for i := 0; i < len(clauses) && !s.stopped; {
		if counts[i] > s.c.limit() {
			if err := s.chunkWords(clauses[i]); err != nil {
				return err
			}
			i++
			continue
		}
		j, sum := i+1, counts[i]
		for j < len(clauses) && sum+1+counts[j] <= s.c.limit() {
			sum += 1 + counts[j]
			j++
		}
		for ; j > i; j-- {
			pack := strings.Join(clauses[i:j], " ")
			ph, n, err := s.phonemize(pack)
			if err != nil {
				return err
			}
			if n <= s.c.limit() || j == i+1 {
				if n > s.c.limit() {
					if err := s.chunkWords(pack); err != nil {
						return err
					}
				} else if err := s.emit(pack, ph); err != nil {
					return err
				}
				break
			}
		}
		i = j
	}
	return nil
}

// chunkWords cuts text between words: each chunk is the longest run of
// words that fits. A word that does not fit a chunk of its own is cut
// into pieces (word.pieces) before the run is packed, so the words
// before it share its first chunk; a character that cannot be cut and
// does not fit is left out with a warning.
func (s *chunkStream) chunkWords(text string) error {
	fields := strings.FieldsFunc(text, jsSpace)
	words := make([]word, len(fields))
	for i, f := range fields {
		words[i] = word{text: f}
	}
	for len(words) > 0 && !s.stopped {
		n, ph, err := s.longestFit(words)
		if err != nil {
			return err
		}
		if n < len(words) {
			// words[n] ends the run: cut it if it is too long even alone
			// (known when n is 0), or it would start the next chunk and
			// end it at once.
			tooLong := n == 0
			if !tooLong {
				_, tokens, err := s.phonemize(words[n].spoken())
				if err != nil {
					return err
				}
				tooLong = tokens > s.c.limit()
			}
			if tooLong {
				words = s.cutWord(words, n)
				continue
			}
		}
		if err := s.emit(joinWords(words[:n]), ph); err != nil {
			return err
		}
		words = words[n:]
	}
	return nil
}

// longestFit returns how many leading words fit one chunk, and their
// phonemes. The count is found by doubling, then bisection, so the
// phonemised probes stay about the size of a chunk even when the text is
// far longer.
func (s *chunkStream) longestFit(words []word) (int, string, error) {
	var fitPh string // phonemes of words[:lo]: lo grows only on a fit
	fits := func(n int) (bool, error) {
		ph, tokens, err := s.phonemize(spokenWords(words[:n]))
		if err != nil || tokens > s.c.limit() {
			return false, err
		}
		fitPh = ph
		return true, nil
	}
	lo, hi := 0, len(words)+1 // words[:lo] fits, words[:hi] does not
	for n := 8; ; n *= 2 {
		n = min(n, len(words))
		ok, err := fits(n)
		if err != nil {
			return 0, "", err
		}
		if !ok {
			hi = n
			break
		}
		lo = n
		if n == len(words) {
			break
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := fits(mid)
		if err != nil {
			return 0, "", err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, fitPh, nil
}

// cutWord replaces words[i] by its pieces, or drops it with a warning
// when it is a single character that cannot be cut.
func (s *chunkStream) cutWord(words []word, i int) []word {
	w := words[i]
	p := w.pieces()
	if p == nil {
		s.c.log().Warn("g2p: left out a character too long to say in one chunk",
			zap.String("text", w.text), zap.String("word", clip(w.source(), 40)), zap.Int("max_tokens", s.c.limit()))
		return slices.Delete(words, i, i+1)
	}
	if w.of == "" {
		s.c.log().Debug("g2p: cutting a word too long for one chunk into pieces",
			zap.String("word", clip(w.text, 40)), zap.Int("pieces", len(p)), zap.Int("max_tokens", s.c.limit()))
	}
	return slices.Replace(words, i, i+1, p...)
}

// joinWords returns the source text of words, separated by spaces.
func joinWords(words []word) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.text)
	}
	return b.String()
}

// spokenWords returns the text the G2P reads for words.
func spokenWords(words []word) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.spoken())
	}
	return b.String()
}

// clip shortens s to at most n runes for messages.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// phonemize runs the G2P after checking the context, and counts tokens.
func (s *chunkStream) phonemize(text string) (string, int, error) {
	if err := s.ctx.Err(); err != nil {
		return "", 0, fmt.Errorf("g2p: chunking: %w", err)
	}
	ph, err := s.c.G2P.Phonemize(text)
	if err != nil {
		return "", 0, err
	}
	return ph, vocab.Count(ph), nil
}

// emit encodes a chunk and yields it, unless it holds no speech.
func (s *chunkStream) emit(text, ph string) error {
	if !speakable(ph) {
		return nil
	}
	ids, dropped, err := vocab.Encode(ph)
	if err != nil {
		return fmt.Errorf("g2p: chunk %q: %w", text, err)
	}
	c := Chunk{Index: s.next, Text: jsTrim(text), Phonemes: ph, IDs: ids, Dropped: dropped}
	s.next++
	if !s.yield(c, nil) {
		s.stopped = true
	}
	return nil
}

// speakable reports whether phonemes hold at least one vocabulary symbol
// other than punctuation and space.
func speakable(ph string) bool {
	for _, r := range ph {
		if _, ok := vocab.ID(r); ok && r != ' ' && !isPunct(r) {
			return true
		}
	}
	return false
}

// splitClauses cuts a sentence after each run of clause punctuation that
// whitespace follows ("one, two; three" → "one,", "two;", "three"),
// trimming the pieces. Punctuation without a following space (3.5, a,b)
// does not cut.
func splitClauses(text string) []string {
	var out []string
	start := 0
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		if !isClausePunct(rs[i]) {
			continue
		}
		j := i
		for j+1 < len(rs) && isClausePunct(rs[j+1]) {
			j++
		}
		if j+1 < len(rs) && jsSpace(rs[j+1]) {
			if piece := jsTrim(string(rs[start : j+1])); piece != "" {
				out = append(out, piece)
			}
			start = j + 1
		}
		i = j
	}
	if piece := jsTrim(string(rs[start:])); piece != "" {
		out = append(out, piece)
	}
	return out
}

// isClausePunct reports whether r may end a clause: clause and sentence
// punctuation, dashes, and the closing quotes and brackets that follow
// them.
func isClausePunct(r rune) bool {
	switch r {
	case ',', ';', ':', '.', '!', '?', '—', '–', '…', '"', '\'', '”', '’', '»', ')', ']', '}':
		return true
	}
	return false
}
