package whisper

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/tensorforge/forge/dsp/mel"
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/buildid"
	"github.com/tensorforge/forge/models/param"
	"github.com/tensorforge/forge/models/whisper/decode"
	"github.com/tensorforge/forge/models/whisper/tokenizer"
	"github.com/tensorforge/forge/weights"
)

// Model is one Whisper size in one precision, bound to an engine. It is safe
// for concurrent use: Windows and Audios made from it are not, but any
// number of them may run at once (each owns its decoding state).
type Model struct {
	id   string
	cfg  Config
	prec Precision
	eng  *graph.Engine
	enc  *encoder
	dec  *decoder
	tok  *tokenizer.Tokenizer
	art  *weights.Artifact // closed by Close when Open loaded it
	sha  string            // of the converted weights file
	span EncodeLength      // how much of each window the encoder runs on

	melMu sync.Mutex
	mel   *mel.Extractor

	tailMu      sync.Mutex
	tail        *silenceTail // computed on the first RealLength window shorter than 30 s
	tails       tailCache    // where it is kept between processes
	tailEncodes int          // times it was computed, not read

	mu     sync.Mutex
	idle   []*session // decoding state of closed windows, for reuse
	closed bool
}

// Open loads a model by size ("tiny", "base", "small") or artifact id from the model
// cache, fetching and converting it on first use (progress goes to the
// weights package's log), and binds it to eng. Close releases it.
func Open(ctx context.Context, eng *graph.Engine, name string, prec Precision, opts ...Option) (*Model, error) {
	id, err := ArtifactID(name)
	if err != nil {
		return nil, err
	}
	if prec != F32 && prec != Int8 && prec != BF16 {
		return nil, fmt.Errorf("%w %v", ErrUnknownPrecision, prec)
	}
	a, err := weights.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	m, err := New(eng, a, prec, opts...)
	if err != nil {
		a.Close()
		return nil, err
	}
	m.art = a
	return m, nil
}

// New binds an opened whisper artifact to eng. The artifact must stay open
// while the model is in use; the caller closes it.
func New(eng *graph.Engine, a *weights.Artifact, prec Precision, opts ...Option) (*Model, error) {
	if eng == nil || a == nil {
		return nil, fmt.Errorf("whisper: New needs an engine and an artifact")
	}
	if prec != F32 && prec != Int8 && prec != BF16 {
		return nil, fmt.Errorf("%w %v", ErrUnknownPrecision, prec)
	}
	raw, err := a.ReadFile("config.json")
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	cfg, err := parseConfig(raw)
	if err != nil {
		return nil, err
	}
	// The artifact's names are Hugging Face's WhisperModel's without
	// "model.": encoder.…, decoder.….
	root := param.New(a, "whisper: "+a.ID)
	enc, dec := newEncoder(root.Sub("encoder"), cfg), newDecoder(root.Sub("decoder"), cfg)
	if err := root.Err(); err != nil {
		return nil, err
	}
	raw, err = a.ReadFile("tokenizer.json")
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	tok, err := tokenizer.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("whisper: %s tokenizer: %w", a.ID, err)
	}
	if tok.Size() != cfg.Vocab {
		return nil, fmt.Errorf("whisper: %s: tokenizer has %d tokens, the model %d", a.ID, tok.Size(), cfg.Vocab)
	}
	if cfg.TextCtx != decode.TextContext {
		return nil, fmt.Errorf("whisper: %s: text context %d, decoding assumes %d", a.ID, cfg.TextCtx, decode.TextContext)
	}
	ex, err := mel.NewExtractor(cfg.NMels)
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	m := &Model{id: a.ID, cfg: cfg, prec: prec, eng: eng, enc: enc, dec: dec, tok: tok, mel: ex, sha: a.Manifest.WeightsSHA256}
	if a.Dir != "" && m.sha != "" {
		m.tails = tailCache{dir: filepath.Join(a.Dir, "derived"), version: buildid.Version()}
	}
	for _, o := range opts {
		if err := o(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Close releases the pooled decoding state and, when Open loaded the
// weights, the weights. Windows and Audios still open must not be used
// afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	idle := m.idle
	m.idle, m.closed = nil, true
	m.mu.Unlock()
	for _, s := range idle {
		s.close()
	}
	m.tailMu.Lock()
	if m.tail != nil {
		m.tail.close()
		m.tail = nil
	}
	m.tailMu.Unlock()
	if m.art != nil {
		err := m.art.Close()
		m.art = nil
		return err
	}
	return nil
}

// ID returns the artifact id ("whisper-tiny").
func (m *Model) ID() string { return m.id }

// WeightsSHA256 returns the sha256 of the converted weights file, for
// scorecards.
func (m *Model) WeightsSHA256() string { return m.sha }

// Config returns the model's dimensions.
func (m *Model) Config() Config { return m.cfg }

// Precision returns the arithmetic the model runs in.
func (m *Model) Precision() Precision { return m.prec }

// EncodeLength returns how much of each window the encoder runs on.
func (m *Model) EncodeLength() EncodeLength { return m.span }

// Engine returns the engine the model runs on.
func (m *Model) Engine() *graph.Engine { return m.eng }

// Tokenizer returns the model's tokenizer (safe for concurrent use).
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Transcribe transcribes 16 kHz mono samples of any length with decode's
// transcribe loop (30-second windows, temperature fallback, timestamps).
func (m *Model) Transcribe(ctx context.Context, samples []float32, opts decode.TranscribeOptions) (*decode.Transcript, error) {
	a, err := m.NewAudio(samples)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return decode.Transcribe(ctx, a, m.tok, opts)
}

// TranscribeMany transcribes several recordings at once: the first window
// of every recording is encoded in one batched pass (EncodeBatch; f32
// models), then each recording is decoded on its own goroutine; on a GPU,
// with 16 recordings or more, their greedy decoder steps are batched into
// one program per token for all of them (a Batch of up to MaxBatch
// sequences, each at its own length). With
// RealLength the first windows are batched by length bucket, one pass per
// bucket, since a window padded to another's length would decode
// differently. Results are in the order of the recordings; each equals
// Transcribe's on its own (on a GPU, up to the order of sums in the
// batched kernels).
func (m *Model) TranscribeMany(ctx context.Context, recordings [][]float32, opts decode.TranscribeOptions) ([]*decode.Transcript, error) {
	audios := make([]*Audio, len(recordings))
	defer func() {
		for _, a := range audios {
			if a != nil {
				a.Close()
			}
		}
	}()
	buckets := map[int][]int{} // recordings by the frames of their first window
	for i, r := range recordings {
		a, err := m.NewAudio(r)
		if err != nil {
			return nil, fmt.Errorf("whisper: recording %d: %w", i, err)
		}
		audios[i] = a
		width := m.encodeFrames(a.firstFrames())
		buckets[width] = append(buckets[width], i)
	}
	for width, idx := range buckets {
		if m.prec == Int8 {
			break
		}
		feats := make([][]float32, len(idx))
		for j, i := range idx {
			var err error
			if feats[j], err = audios[i].features(nil, 0, width); err != nil {
				return nil, fmt.Errorf("whisper: recording %d: %w", i, err)
			}
		}
		ws, err := m.EncodeBatch(ctx, feats)
		if err != nil {
			return nil, err
		}
		for j, w := range ws {
			audios[idx[j]].first, audios[idx[j]].firstF = w, width
		}
	}
	out := make([]*decode.Transcript, len(recordings))
	errs := make([]error, len(recordings))
	var batch *Batch
	if len(audios) >= batchMinSequences && m.batchesSteps() {
		var err error
		if batch, err = m.NewBatch(min(len(audios), MaxBatch)); err != nil {
			return nil, err
		}
		defer batch.Close()
	}
	var wg sync.WaitGroup
	for i, a := range audios {
		a.UseBatch(batch)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = decode.Transcribe(ctx, a, m.tok, opts)
			a.Close() // its windows leave the batch now, not when the last recording is done
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("whisper: recording %d: %w", i, err)
		}
	}
	return out, nil
}
