package say

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/kokoro"
	"github.com/tensorforge/forge/models/kokoro/g2p"
	"go.uber.org/goleak"
)

// needFrontEnd returns an en-us G2P, skipping loudly without espeak-ng.
func needFrontEnd(t testing.TB) *g2p.G2P {
	t.Helper()
	front, err := g2p.NewEspeak(g2p.AmericanEnglish)
	if err != nil {
		t.Skipf("SKIP: espeak-ng unavailable (apt-get install libespeak-ng1 espeak-ng-data): %v", err)
	}
	return front
}

// fakeSpeak stands in for the model: 100 samples per phoneme token, in
// two pieces (the first within sm.FirstTokens tokens) when sm asks for a
// streamed first piece of a longer chunk.
func fakeSpeak(_ context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error] {
	firstTokens := sm.FirstTokens
	return func(yield func([]float32, error) bool) {
		if len(c.IDs) < 3 {
			yield(nil, errors.New("empty chunk"))
			return
		}
		sizes := []int{c.Tokens()}
		if firstTokens > 0 && c.Tokens() > firstTokens {
			sizes = []int{firstTokens, c.Tokens() - firstTokens}
		}
		for _, n := range sizes {
			if !yield(make([]float32, 100*n), nil) {
				return
			}
		}
	}
}

func TestPipelineStreamsLongText(t *testing.T) {
	defer goleak.VerifyNone(t)
	front := needFrontEnd(t)
	// 100 kB of text, streamed: chunks are synthesised while the rest is
	// still being read.
	var b strings.Builder
	for b.Len() < 100_000 {
		b.WriteString("The quick brown fox jumps over the lazy dog, again and again. ")
	}
	var blocks int
	var total, next int64
	sink := func(_ context.Context, a Audio) error {
		if a.Offset != next || a.Rate != 16000 {
			t.Errorf("block at %d (%d Hz), want %d at 16000", a.Offset, a.Rate, next)
		}
		blocks++
		total += int64(len(a.Samples))
		next += int64(len(a.Samples))
		return nil
	}
	p, err := buildPipeline(&g2p.Chunker{G2P: front}, fakeSpeak, kokoro.DefaultFirstTokens, 16000, Reader(strings.NewReader(b.String())), sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if blocks < 1000 || total == 0 {
		t.Fatalf("%d blocks, %d samples", blocks, total)
	}
	if p.Metrics().TimeToFirstOutput() <= 0 {
		t.Errorf("no time to first output recorded")
	}
}

func TestPipelineFirstChunkSplit(t *testing.T) {
	front := needFrontEnd(t)
	var pieces, firsts, leads []int
	speak := func(ctx context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error] {
		firsts = append(firsts, sm.FirstTokens)
		leads = append(leads, sm.Lead)
		return func(yield func([]float32, error) bool) {
			for pcm, err := range fakeSpeak(ctx, c, sm) {
				pieces = append(pieces, len(pcm)/100)
				// 0.4 s of audio a token: the first sentence has not
				// played out when the second is synthesised, however
				// slow the machine.
				if !yield(make([]float32, 100*len(pcm)), err) {
					return
				}
			}
		}
	}
	sink := func(context.Context, Audio) error { return nil }
	text := "The quick brown fox jumps over the lazy dog, while the small cat sleeps quietly by the warm fire. And then it rained."
	p, err := buildPipeline(&g2p.Chunker{G2P: front}, speak, 24, kokoro.SampleRate, String(text), sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(firsts, []int{24, 0}) || len(pieces) != 3 || pieces[0] > 24 {
		t.Fatalf("first-piece limits %v, pieces of %v tokens; want 24 for the first sentence only, and it in two with at most 24 first", firsts, pieces)
	}
	if want := []int{0, 100 * 100 * (pieces[0] + pieces[1])}; !slices.Equal(leads, want) {
		t.Fatalf("leads %v, want %v: each chunk is told the audio before it", leads, want)
	}
}

func TestPipelineBadInput(t *testing.T) {
	front := needFrontEnd(t)
	sink := func(context.Context, Audio) error { return nil }
	for _, c := range []struct {
		name, text string
		want       error
	}{
		{"empty", "", ErrNoSpeech},
		{"whitespace", "  \n\t ", ErrNoSpeech},
		{"punctuation", "... ?! --", ErrNoSpeech},
		{"invalid utf-8", "hello \xff\xfe world", ErrInvalidUTF8},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			p, err := buildPipeline(&g2p.Chunker{G2P: front}, fakeSpeak, 0, kokoro.SampleRate, Reader(strings.NewReader(c.text)), sink)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Run(context.Background()); !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

func TestPipelineCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	front := needFrontEnd(t)
	slow := func(ctx context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error] {
		select {
		case <-ctx.Done():
			return func(yield func([]float32, error) bool) { yield(nil, ctx.Err()) }
		case <-time.After(20 * time.Millisecond):
		}
		return fakeSpeak(ctx, c, sm)
	}
	sink := func(context.Context, Audio) error { return nil }
	text := strings.Repeat("One sentence after another. ", 200)
	p, err := buildPipeline(&g2p.Chunker{G2P: front}, slow, 0, kokoro.SampleRate, String(text), sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", err)
	}
}

// TestTokens: fragments sent on a channel are spoken sentence by sentence
// while later ones are still to come — the first sentence is synthesised
// before the channel has sent the second — and a run whose context ends
// stops waiting for the channel.
func TestTokens(t *testing.T) {
	defer goleak.VerifyNone(t)
	front := needFrontEnd(t)
	ch := make(chan string)
	spoken := make(chan string, 10)
	speak := func(ctx context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error] {
		spoken <- c.Text
		return fakeSpeak(ctx, c, sm)
	}
	p, err := buildPipeline(&g2p.Chunker{G2P: front}, speak, 0, kokoro.SampleRate, Tokens(ch), func(context.Context, Audio) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	for _, tok := range []string{"Hello", " there", ",", " my", " friend", ".", " How"} {
		ch <- tok
	}
	select {
	case got := <-spoken:
		if got != "Hello there, my friend." {
			t.Errorf("first chunk %q", got)
		}
	case <-time.After(2 * time.Minute): // a guard against a hang, not a measure
		t.Fatal("the first sentence was not spoken before the text ended")
	}
	for _, tok := range []string{" are", " you", "?"} {
		ch <- tok
	}
	close(ch)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := <-spoken; got != "How are you?" {
		t.Errorf("second chunk %q", got)
	}

	ch = make(chan string) // never closed
	p, err = buildPipeline(&g2p.Chunker{G2P: front}, fakeSpeak, 0, kokoro.SampleRate, Tokens(ch), func(context.Context, Audio) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", err)
	}
}

// TestPlaybackStall checks the gaps a real-time player would leave: none
// while each block comes before the audio before it has played, the wait
// otherwise, counted from the first block.
func TestPlaybackStall(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name   string
		blocks [][2]int // ready at (ms after t0), audio (ms)
		want   time.Duration
	}{
		{"one block", [][2]int{{300, 1000}}, 0},
		{"each in time", [][2]int{{300, 700}, {900, 1400}, {2000, 4000}}, 0},
		{"the paragraph before", [][2]int{{370, 710}, {2360, 10010}}, ms(2360 - 370 - 710)},
		{"two gaps", [][2]int{{0, 100}, {200, 100}, {400, 100}}, ms(200)},
		{"right on time", [][2]int{{0, 100}, {100, 100}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p playback
			for _, b := range c.blocks {
				p.add(t0.Add(ms(b[0])), ms(b[1]))
			}
			if p.stall != c.want {
				t.Errorf("stall %v, want %v", p.stall, c.want)
			}
		})
	}
}

// TestTokensAfterPlayback: a sentence whose text comes after the audio
// before it has played out (an LLM pausing between sentences) gets a
// first piece of its own, as the first sentence does; one that comes
// while audio is still playing is told how much came before it.
func TestTokensAfterPlayback(t *testing.T) {
	defer goleak.VerifyNone(t)
	front := needFrontEnd(t)
	ch := make(chan string)
	type call struct {
		text string
		sm   kokoro.Streaming
	}
	calls := make(chan call, 10)
	speak := func(ctx context.Context, c g2p.Chunk, sm kokoro.Streaming) iter.Seq2[[]float32, error] {
		calls <- call{c.Text, sm}
		return fakeSpeak(ctx, c, sm) // 100 samples a token: a sentence plays out in a few ms
	}
	p, err := buildPipeline(&g2p.Chunker{G2P: front}, speak, 16, kokoro.SampleRate, Tokens(ch), func(context.Context, Audio) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	for _, tok := range []string{"Hello there, my friend.", " How"} {
		ch <- tok
	}
	first := <-calls
	time.Sleep(300 * time.Millisecond) // the first sentence's 0.1 s of audio has played
	ch <- " are you doing today, my dear old friend?"
	close(ch)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	second := <-calls
	if first.sm != (kokoro.Streaming{FirstTokens: 16}) || second.sm != (kokoro.Streaming{FirstTokens: 16}) {
		t.Errorf("streaming %+v for %q, %+v for %q; want a first piece of 16 tokens for both", first.sm, first.text, second.sm, second.text)
	}
}
