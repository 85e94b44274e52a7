package whisper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/whisper/align"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
)

// Head names one cross-attention head of the decoder.
type Head struct{ Layer, Head int }

// ErrNoAlignmentHeads: word timing needs the model's alignment heads, and
// none are known for it.
var ErrNoAlignmentHeads = errors.New("whisper: no alignment heads known for this model")

// AlignmentHeads returns the decoder's cross-attention heads whose weights
// follow the audio being spoken: openai-whisper's _ALIGNMENT_HEADS for
// tiny, base and small (decoded from its base85 strings; align_test.go
// decodes them again, and for small also checks them against the
// alignment_heads of the package's generation_config.json), nil for
// another model.
func (m *Model) AlignmentHeads() []Head {
	switch m.id {
	case "whisper-tiny":
		return []Head{{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}
	case "whisper-base":
		return []Head{{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}
	case "whisper-small":
		return []Head{{5, 3}, {5, 9}, {8, 0}, {8, 4}, {8, 7}, {8, 8}, {9, 0}, {9, 7}, {9, 9}, {10, 5}}
	}
	return nil
}

// CrossAttention feeds tokens through the decoder of w from position 0
// (teacher forcing, in one pass; the window's decoding caches are not
// touched) and returns, for each alignment head, its cross-attention
// weights [len(tokens), frames] row-major over the first frames encoder
// positions (softmaxed over those, as openai-whisper does), and probs:
// probs[i] is the probability of tokens[i+1] after tokens[:i+1] among the
// text tokens (ids below <|endoftext|>), 0 for a special token.
func (w *Window) CrossAttention(ctx context.Context, tokens []int32, frames int) (heads [][]float32, probs []float64, err error) {
	if w.s == nil {
		return nil, nil, ErrClosed
	}
	m := w.m
	c := m.cfg
	n := len(tokens)
	switch {
	case n < 2 || n > c.TextCtx:
		return nil, nil, fmt.Errorf("whisper: cross-attention of %d tokens (want 2..%d)", n, c.TextCtx)
	case frames < 1 || frames > c.AudioCtx:
		return nil, nil, fmt.Errorf("whisper: cross-attention over %d positions (want 1..%d)", frames, c.AudioCtx)
	}
	if err := w.checkTokens(tokens); err != nil {
		return nil, nil, err
	}
	hs := m.AlignmentHeads()
	if len(hs) == 0 {
		return nil, nil, fmt.Errorf("%w (%s)", ErrNoAlignmentHeads, m.id)
	}
	ids := make([]int64, n)
	for i, t := range tokens {
		ids[i] = int64(t)
	}
	g := graph.New()
	dh := c.DModel / c.DecoderHeads
	positions := g.Arange(0, 1, n, graph.I64)
	var outs []graph.Tensor
	// One pass over the whole token sequence (no caches), reading the
	// attention weights of the alignment heads over the first frames.
	a := m.encoderArith(g)
	x := m.dec.forward(a, g.InputI64("ids", graph.Shape{1, n}, ids), positions, n, decoderPass{
		crossK: w.s.crossK, crossV: w.s.crossV,
		probe: func(layer int, qh, kT graph.Tensor) { // [1, H, n, dh], [H, dh, AudioCtx]
			for _, hd := range hs {
				if hd.Layer == layer {
					qk := qh.Slice(1, hd.Head, hd.Head+1).Reshape(n, dh).MatMul(kT.Slice(0, hd.Head, hd.Head+1).Reshape(dh, c.AudioCtx))
					outs = append(outs, qk.Slice(1, 0, frames).Softmax(1))
				}
			}
		},
	})
	outs = append(outs, m.dec.logits(a, x.Reshape(n, c.DModel)))
	vals, err := m.eng.Eval(ctx, outs...)
	if err != nil {
		return nil, nil, fmt.Errorf("whisper: cross-attention: %w", err)
	}
	for _, v := range vals[:len(hs)] {
		heads = append(heads, slices.Clone(v.F32()))
	}
	logits := vals[len(hs)].F32()
	eot := m.tok.Specials().EOT
	probs = make([]float64, n-1)
	for i := range n - 1 {
		next := tokens[i+1]
		if next >= eot {
			continue
		}
		row := logits[i*c.Vocab : i*c.Vocab+int(eot)]
		mx := float64(slices.Max(row))
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		probs[i] = math.Exp(float64(row[next])-mx) / sum
	}
	return heads, probs, nil
}

// Word is a word of a transcript with its time.
type Word = align.Word

// Words times the words of the segments one window decoded (each given
// by its tokens, timestamps and all, as decode.Segment.Tokens): the window
// at mel frame seek, of which frames hold audio, is encoded again, its
// text fed through the decoder, and the alignment heads' cross-attention
// aligned to the audio by dynamic time warping (package align); word
// edges are then moved off quiet frames (align.TrimSilence). It
// returns each segment's words, their times in seconds from the start of
// the window; a segment without text gets none. language and task are
// those the window was decoded with.
func (a *Audio) Words(ctx context.Context, seek, frames int, language string, task tokenizer.Task, segments [][]int32) ([][]Word, error) {
	tok := a.m.tok
	sp := tok.Specials()
	var text []int32
	counts := make([]int, len(segments))
	for i, s := range segments {
		for _, t := range s {
			if t < sp.EOT {
				text = append(text, t)
				counts[i]++
			}
		}
	}
	out := make([][]Word, len(segments))
	if len(text) == 0 {
		return out, nil
	}
	sot, err := sp.SOTSequence(language, task, false) // ends with <|notimestamps|>
	if err != nil {
		return nil, fmt.Errorf("whisper: words: %w", err)
	}
	tokens := slices.Concat(sot, text, []int32{sp.EOT})
	if len(tokens) > a.m.cfg.TextCtx {
		return nil, fmt.Errorf("whisper: words: %d tokens do not fit the decoder's %d", len(tokens), a.m.cfg.TextCtx)
	}
	d, err := a.Encode(ctx, seek, frames)
	if err != nil {
		return nil, fmt.Errorf("whisper: words: %w", err)
	}
	win, ok := d.(*Window)
	if !ok {
		return nil, fmt.Errorf("whisper: words: the window is a %T", d)
	}
	positions := max(frames/decode.InputStride, 1)
	heads, probs, err := win.CrossAttention(ctx, tokens, positions)
	if err != nil {
		return nil, fmt.Errorf("whisper: words: %w", err)
	}
	// Rows from <|notimestamps|> on predict the text tokens and then
	// <|endoftext|>: one row per token of text + [eot].
	first, rows := len(sot)-1, len(text)+1
	for h, w := range heads {
		heads[h] = w[first*positions : (first+rows)*positions]
	}
	mat, err := align.Matrix(heads, rows, positions)
	if err != nil {
		return nil, fmt.Errorf("whisper: words: %w", err)
	}
	spaced := !slices.Contains(align.Unspaced, language)
	words, groups, err := align.Split(append(slices.Clone(text), sp.EOT), tok.Decode, spaced, sp.EOT)
	if err != nil {
		return nil, fmt.Errorf("whisper: words: %w", err)
	}
	if len(words) < 2 {
		return out, nil
	}
	timed, err := align.Times(mat, rows, positions, words[:len(words)-1], groups[:len(groups)-1], probs[first:first+len(text)])
	if err != nil {
		return nil, fmt.Errorf("whisper: words: %w", err)
	}
	timed = align.TrimSilence(align.MergePunctuation(timed), a.loudness(seek, positions), mat)
	// Hand each word to the segment holding its first token.
	seg, used := 0, 0
	for _, w := range timed {
		for seg < len(segments)-1 && used >= counts[seg] {
			used -= counts[seg]
			seg++
		}
		out[seg] = append(out[seg], w)
		used += len(w.Tokens)
	}
	return out, nil
}

// loudness returns the mean log-mel level of each encoder position (two
// mel frames, 20 ms) of the window at frame seek, for positions of them;
// positions past the audio read the spectrogram's silence.
func (a *Audio) loudness(seek, positions int) []float64 {
	n := a.m.cfg.NMels
	out := make([]float64, positions)
	for p := range out {
		var sum float64
		for f := seek + decode.InputStride*p; f < seek+decode.InputStride*(p+1); f++ {
			f := min(f, a.total-1)
			for b := range n {
				sum += float64(a.mel[b*a.total+f])
			}
		}
		out[p] = sum / float64(n*decode.InputStride)
	}
	return out
}
