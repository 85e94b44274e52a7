// Package align times the words of a Whisper transcript from the
// decoder's cross-attention, as openai-whisper's word_timestamps and
// whisper.cpp's DTW timestamps do: a few "alignment heads" of the decoder
// attend to the audio frame being spoken, so their attention weights,
// normalised and smoothed, make a token × frame similarity through which
// dynamic time warping finds the monotonic path; a word starts where the
// path first reaches its first token.
//
// The package is the arithmetic only (normalising, median filter, DTW,
// word splitting, punctuation merging); models/whisper runs the decoder
// and hands it the weights.
package align

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// MedianWidth is the median filter's width over frames (openai-whisper's
// medfilt_width).
const MedianWidth = 7

// FrameSeconds is the time between two encoder positions: 20 ms.
const FrameSeconds = 0.02

// ErrShape: weights that do not hold heads × tokens × frames values.
var ErrShape = errors.New("align: attention weights of the wrong shape")

// Matrix turns the alignment heads' cross-attention weights (each head's
// [tokens, frames], row-major, every row a softmax over the frames) into
// one similarity [tokens, frames]: each head's weights standardised over
// the tokens of every frame, median filtered along the frames (width
// MedianWidth), then averaged over the heads.
func Matrix(heads [][]float32, tokens, frames int) ([]float32, error) {
	if len(heads) == 0 || tokens <= 0 || frames <= 0 {
		return nil, fmt.Errorf("%w: %d heads of %d tokens × %d frames", ErrShape, len(heads), tokens, frames)
	}
	out := make([]float32, tokens*frames)
	z := make([]float64, tokens*frames)
	row := make([]float64, frames)
	for h, w := range heads {
		if len(w) != tokens*frames {
			return nil, fmt.Errorf("%w: head %d holds %d values, want %d × %d", ErrShape, h, len(w), tokens, frames)
		}
		for f := range frames {
			var mean float64
			for t := range tokens {
				mean += float64(w[t*frames+f])
			}
			mean /= float64(tokens)
			var v float64
			for t := range tokens {
				d := float64(w[t*frames+f]) - mean
				v += d * d
			}
			std := math.Sqrt(v / float64(tokens))
			for t := range tokens {
				z[t*frames+f] = (float64(w[t*frames+f]) - mean) / std
			}
		}
		for t := range tokens {
			copy(row, z[t*frames:(t+1)*frames])
			medianFilter(row, MedianWidth)
			for f, v := range row {
				out[t*frames+f] += float32(v / float64(len(heads)))
			}
		}
	}
	return out, nil
}

// medianFilter replaces x by its running median of width w (odd), the ends
// padded by reflection, as openai-whisper's median_filter; a row no longer
// than w/2 is left as it is.
func medianFilter(x []float64, w int) {
	pad := w / 2
	n := len(x)
	if n <= pad {
		return
	}
	padded := make([]float64, n+2*pad)
	for i := range padded {
		j := i - pad
		switch {
		case j < 0:
			j = -j
		case j >= n:
			j = 2*(n-1) - j
		}
		padded[i] = x[j]
	}
	win := make([]float64, w)
	for i := range x {
		copy(win, padded[i:i+w])
		slices.Sort(win) // NaN sorts first; a standardised row holds none unless a frame is constant
		x[i] = win[pad]
	}
}

// DTW returns the cheapest monotonic path through cost [n, m] (row-major)
// from (0, 0) to (n−1, m−1), moving one row, one column or both at a time,
// as index pairs in order. Ties prefer the diagonal, then the row, as
// openai-whisper's dtw_cpu.
func DTW(cost []float32, n, m int) (rows, cols []int, err error) {
	if n <= 0 || m <= 0 || len(cost) != n*m {
		return nil, nil, fmt.Errorf("%w: cost of %d values for %d × %d", ErrShape, len(cost), n, m)
	}
	W := m + 1
	acc := make([]float64, (n+1)*W)
	trace := make([]int8, (n+1)*W)
	for i := range acc {
		acc[i] = math.Inf(1)
	}
	acc[0] = 0
	for j := 1; j <= m; j++ {
		for i := 1; i <= n; i++ {
			c0, c1, c2 := acc[(i-1)*W+j-1], acc[(i-1)*W+j], acc[i*W+j-1]
			var c float64
			var t int8
			switch {
			case c0 < c1 && c0 < c2:
				c, t = c0, 0
			case c1 < c0 && c1 < c2:
				c, t = c1, 1
			default:
				c, t = c2, 2
			}
			acc[i*W+j] = float64(cost[(i-1)*m+j-1]) + c
			trace[i*W+j] = t
		}
	}
	for j := range W {
		trace[j] = 2
	}
	for i := range n + 1 {
		trace[i*W] = 1
	}
	i, j := n, m
	for i > 0 || j > 0 {
		rows, cols = append(rows, i-1), append(cols, j-1)
		switch trace[i*W+j] {
		case 0:
			i, j = i-1, j-1
		case 1:
			i--
		default:
			j--
		}
	}
	// The walk ends at the virtual corner (−1, −1) only through the
	// first cell; drop any step that left the matrix.
	for k := len(rows) - 1; k >= 0 && (rows[k] < 0 || cols[k] < 0); k-- {
		rows, cols = rows[:k], cols[:k]
	}
	slices.Reverse(rows)
	slices.Reverse(cols)
	return rows, cols, nil
}

// Unspaced lists the languages written without spaces between words
// (openai-whisper's list): their words are cut at every whole character.
var Unspaced = []string{"zh", "ja", "th", "lo", "my", "yue"}

// Split groups tokens into words: first into the shortest runs that
// decode to whole UTF-8 characters, then, for a spaced language, joining
// each run that neither starts with a space, nor is punctuation, nor
// starts with a special token (id ≥ special) to the word before it.
// decode renders ids as text (specials as ""). The words keep their
// leading space.
func Split(tokens []int32, decode func([]int32) (string, error), spaced bool, special int32) ([]string, [][]int32, error) {
	full, err := decode(tokens)
	if err != nil {
		return nil, nil, err
	}
	var words []string
	var groups [][]int32
	var cur []int32
	offset := 0
	for _, t := range tokens {
		cur = append(cur, t)
		s, err := decode(cur)
		if err != nil {
			return nil, nil, err
		}
		at := strings.IndexRune(s, '\uFFFD')
		if at < 0 || offset+at < len(full) && strings.HasPrefix(full[offset+at:], "\uFFFD") {
			words, groups = append(words, s), append(groups, cur)
			cur = nil
			offset += len(s)
		}
	}
	if len(cur) > 0 { // an unfinished character at the end
		s, err := decode(cur)
		if err != nil {
			return nil, nil, err
		}
		words, groups = append(words, s), append(groups, cur)
	}
	if !spaced {
		return words, groups, nil
	}
	var ws []string
	var gs [][]int32
	for i, w := range words {
		isSpecial := groups[i][0] >= special
		if len(ws) == 0 || isSpecial || strings.HasPrefix(w, " ") || isPunctuation(strings.TrimSpace(w)) {
			ws, gs = append(ws, w), append(gs, slices.Clone(groups[i]))
			continue
		}
		ws[len(ws)-1] += w
		gs[len(gs)-1] = append(gs[len(gs)-1], groups[i]...)
	}
	return ws, gs, nil
}

// isPunctuation reports whether s is one ASCII punctuation character
// (Python's `s in string.punctuation`, which also holds for "").
func isPunctuation(s string) bool {
	return s == "" || len(s) == 1 && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", rune(s[0]))
}

// Word is a word with its time in the window and the tokens it spans.
type Word struct {
	// Text is the word with its leading space, punctuation merged in.
	Text string
	// Start and End are seconds from the start of the window.
	Start, End float64
	// Probability is the mean probability of the word's tokens.
	Probability float64
	// Tokens are the word's token ids.
	Tokens []int32

	row int // the similarity row of its first token (Times)
}

// Times places words on the path through the similarity matrix [n, m]
// whose rows are the words' tokens in order and one more row (the token
// that ended the text, <|endoftext|>): a word starts at the first frame
// the path reaches its first token's row, and ends where the next word
// starts. probs holds each token's probability (n−1 of them).
func Times(matrix []float32, n, m int, words []string, groups [][]int32, probs []float64) ([]Word, error) {
	total := 0
	for _, g := range groups {
		total += len(g)
	}
	if len(words) != len(groups) || total+1 != n || len(probs) != total {
		return nil, fmt.Errorf("%w: %d rows for %d words of %d tokens with %d probabilities", ErrShape, n, len(words), total, len(probs))
	}
	cost := make([]float32, len(matrix))
	for i, v := range matrix {
		cost[i] = -v
	}
	rows, cols, err := DTW(cost, n, m)
	if err != nil {
		return nil, err
	}
	// first[r]: the frame where the path enters row r.
	first := make([]float64, n)
	for k, r := range rows {
		if k == 0 || r != rows[k-1] {
			first[r] = float64(cols[k]) * FrameSeconds
		}
	}
	out := make([]Word, 0, len(words))
	at := 0
	for i, w := range words {
		end := at + len(groups[i])
		var p float64
		for _, q := range probs[at:end] {
			p += q
		}
		if len(groups[i]) > 0 {
			p /= float64(len(groups[i]))
		}
		out = append(out, Word{Text: w, Start: first[at], End: first[end], Probability: p, Tokens: groups[i], row: at})
		at = end
	}
	return out, nil
}

// Punctuation merged into neighbouring words (openai-whisper's defaults):
// Prepended marks join the word after them, Appended the word before.
const (
	Prepended = "\"'“¿([{-"
	Appended  = "\"'.。,，!！?？:：”)]}、"
)

// MergePunctuation joins words that are only punctuation to their
// neighbours, as openai-whisper's merge_punctuations: an opening mark (with
// its space) to the word after it, a closing one to the word before it;
// the word of the mark is dropped, its time given to the word it joined
// only through its tokens (the joined word keeps its own times).
func MergePunctuation(words []Word) []Word {
	ws := slices.Clone(words)
	for i, j := len(ws)-2, len(ws)-1; i >= 0; i-- {
		prev, next := &ws[i], &ws[j]
		if strings.HasPrefix(prev.Text, " ") && isOneOf(strings.TrimSpace(prev.Text), Prepended) {
			next.Text = prev.Text + next.Text
			next.Tokens = append(slices.Clone(prev.Tokens), next.Tokens...)
			prev.Text, prev.Tokens = "", nil
		} else {
			j = i
		}
	}
	for i, j := 0, 1; j < len(ws); j++ {
		prev, next := &ws[i], &ws[j]
		if !strings.HasSuffix(prev.Text, " ") && isOneOf(next.Text, Appended) {
			prev.Text += next.Text
			prev.Tokens = append(slices.Clone(prev.Tokens), next.Tokens...)
			next.Text, next.Tokens = "", nil
		} else {
			i = j
		}
	}
	return slices.DeleteFunc(ws, func(w Word) bool { return w.Text == "" })
}

// isOneOf reports whether s is one of the characters of set.
func isOneOf(s, set string) bool {
	return s != "" && strings.Contains(set, s) && len([]rune(s)) == 1
}

// MinPause is the shortest quiet stretch TrimSilence takes for a pause
// between words rather than a stop inside one (closures last 50–100 ms).
const MinPause = 0.2

// TrimSilence moves word edges off quiet frames. The path through the
// attention gives a pause to one of the words around it — the word before
// runs on, or the next starts early — and often the tail of one word's
// speech to the next. So, first, a word whose span holds a pause (a quiet
// run of at least MinPause between its first and last loud positions)
// keeps the side of its longest pause that its first token attends to
// more (its row of matrix [rows, len(loud)], as Times was given, averaged
// over the side's loud positions) and hands the other side to the
// neighbouring word it touches; then every word's start moves forward and
// its end back past quiet positions.
// Quiet is below a fifth of the way from the window's noise floor (its
// 10th percentile of loudness) to its speech level (95th). loud is the
// loudness of each position (20 ms) of the window, on any scale monotonic
// in level (log-mel means). A word quiet throughout keeps its times.
func TrimSilence(words []Word, loud []float64, matrix []float32) []Word {
	if len(loud) == 0 {
		return words
	}
	sorted := slices.Sorted(slices.Values(loud))
	floor, level := sorted[len(sorted)/10], sorted[len(sorted)*95/100]
	thr := floor + (level-floor)/5
	quiet := func(p int) bool { return p < 0 || p >= len(loud) || loud[p] < thr }
	pos := func(t float64) int { return int(math.Round(t / FrameSeconds)) }
	minPause := int(math.Round(MinPause / FrameSeconds))
	out := slices.Clone(words)
	for i := range out {
		w := &out[i]
		s, e := pos(w.Start), pos(w.End) // positions [s, e)
		a, b := s, e
		for a < b && quiet(a) {
			a++
		}
		for b > a && quiet(b-1) {
			b--
		}
		ps, pe := longestQuiet(a, b, quiet)
		if pe-ps < minPause {
			continue
		}
		m := len(loud)
		attention := func(from, to int) float64 {
			var sum float64
			n := 0
			for p := from; p < to; p++ {
				if !quiet(p) && (w.row+1)*m <= len(matrix) {
					sum += float64(matrix[w.row*m+p])
					n++
				}
			}
			if n == 0 {
				return math.Inf(-1)
			}
			return sum / float64(n)
		}
		switch {
		case attention(a, ps) >= attention(pe, b):
			if i+1 < len(out) && pos(out[i+1].Start) == e {
				out[i+1].Start = float64(pe) * FrameSeconds
			}
			w.End = float64(ps) * FrameSeconds
		default:
			if i > 0 && pos(out[i-1].End) == s {
				out[i-1].End = float64(ps) * FrameSeconds
			}
			w.Start = float64(pe) * FrameSeconds
		}
	}
	for i := range out {
		w := &out[i]
		a, b := pos(w.Start), pos(w.End)-1 // the word's first and last positions
		for a <= b && quiet(a) {
			a++
		}
		for b >= a && quiet(b) {
			b--
		}
		if a > b {
			continue
		}
		w.Start, w.End = float64(a)*FrameSeconds, float64(b+1)*FrameSeconds
	}
	return out
}

// longestQuiet returns the longest run of quiet positions in [s, e), the
// first of equals.
func longestQuiet(s, e int, quiet func(int) bool) (int, int) {
	bs, be := s, s
	for p := s; p < e; {
		if !quiet(p) {
			p++
			continue
		}
		q := p
		for q < e && quiet(q) {
			q++
		}
		if q-p > be-bs {
			bs, be = p, q
		}
		p = q
	}
	return bs, be
}
