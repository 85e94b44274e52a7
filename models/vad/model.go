package vad

import (
	"context"
	"fmt"
	"sync"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
	"github.com/tensorforge/forge/models/param"
	"github.com/tensorforge/forge/weights"
)

// Sample rates the model has a branch for.
const (
	Rate16k = 16000
	Rate8k  = 8000
)

// geometry is what differs between the two branches of the export, as the
// ONNX constants give it: 16 kHz takes 512 new samples with 64 of context,
// reflect-pads 64 on the right and runs a 256-point STFT with hop 128
// (four frames, 129 bins); 8 kHz halves everything (65 bins).
type geometry struct {
	rate    int
	chunk   int // new samples per call
	context int // samples carried over from the previous call
	filter  int // STFT window length (forward basis kernel size)
	hop     int // STFT hop (basis convolution stride)
	pad     int // reflect padding on the right of the input
}

var geometries = []geometry{
	{rate: Rate16k, chunk: 512, context: 64, filter: 256, hop: 128, pad: 64},
	{rate: Rate8k, chunk: 256, context: 32, filter: 128, hop: 64, pad: 32},
}

// Hidden is the LSTM width; the state of a stream is [2, 1, Hidden] (h, c).
const Hidden = 128

// Model is Silero VAD v6 bound to an engine. It is safe for concurrent use:
// all streams share its weights and compiled programs, and each stream keeps
// its own state in a Detector.
type Model struct {
	eng      *graph.Engine
	art      *weights.Artifact // closed by Close when Open loaded it
	branches map[int]*branch
	fast     map[int]*fastNet // by rate; empty where the compiled programs run

	mu       sync.Mutex
	idle     map[int][]*runner      // recycled per-stream programs and states, by rate
	idleFast map[int][]*fastStreams // recycled fast-path stream buffers, by rate
	close    bool
}

// Open loads the silero-vad-v6 artifact from the model cache (fetching and
// converting it on first use) and binds it to eng. Close releases it.
func Open(ctx context.Context, eng *graph.Engine) (*Model, error) {
	a, err := weights.Load(ctx, weights.SileroVADv6)
	if err != nil {
		return nil, fmt.Errorf("vad: %w", err)
	}
	m, err := New(eng, a)
	if err != nil {
		a.Close()
		return nil, err
	}
	m.art = a
	return m, nil
}

// New binds already-opened weights to eng. The artifact must stay open
// while the model is in use; the caller closes it.
func New(eng *graph.Engine, a *weights.Artifact) (*Model, error) {
	if eng == nil || a == nil {
		return nil, fmt.Errorf("vad: New needs an engine and an artifact")
	}
	m := &Model{eng: eng, branches: map[int]*branch{}, fast: map[int]*fastNet{},
		idle: map[int][]*runner{}, idleFast: map[int][]*fastStreams{}}
	useFast := fastAvailable(eng.Backend().Name())
	for _, geo := range geometries {
		s := param.New(a, fmt.Sprintf("vad: %s, %d Hz branch", a.ID, geo.rate))
		if geo.rate == Rate8k {
			s = s.Sub("model_8k") // Silero's own attribute for its 8 kHz model
		}
		b, err := newBranch(s, geo)
		if err != nil {
			if geo.rate == Rate16k {
				return nil, err
			}
			continue // the 8 kHz branch is optional
		}
		m.branches[geo.rate] = b
		if useFast {
			// A geometry the fast path is not laid out for keeps the
			// compiled program; the weights loaded, so that is no error.
			if n, err := newFastNet(b); err == nil {
				m.fast[geo.rate] = n
			}
		}
	}
	return m, nil
}

// Path says how the model computes a chunk on this machine, for logs and
// reports: "fast (panels: avx512)" when streams run the fused CPU sequence
// of fast.go, "graph" when they run compiled programs on the engine (a
// GPU engine, or a CPU without a SIMD panel kernel).
func (m *Model) Path() string {
	if len(m.fast) > 0 {
		return "fast (panels: " + gemm.PanelPath() + ")"
	}
	return "graph"
}

// Close releases the recycled detector programs and, when Open loaded the
// weights, the weights. Detectors still open must not be used afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	idle := m.idle
	m.idle, m.idleFast, m.close = nil, nil, true
	m.mu.Unlock()
	for _, rs := range idle {
		for _, r := range rs {
			r.close()
		}
	}
	if m.art != nil {
		err := m.art.Close()
		m.art = nil
		return err
	}
	return nil
}

// Engine returns the engine the model runs on.
func (m *Model) Engine() *graph.Engine { return m.eng }

// SampleRates lists the rates the loaded weights support (16000 first).
func (m *Model) SampleRates() []int {
	var r []int
	for _, geo := range geometries {
		if m.branches[geo.rate] != nil {
			r = append(r, geo.rate)
		}
	}
	return r
}

// ChunkSize returns how many new samples one call scores at rate (512 at
// 16 kHz, 256 at 8 kHz), or an error wrapping ErrSampleRate.
func (m *Model) ChunkSize(rate int) (int, error) {
	b, err := m.branch(rate)
	if err != nil {
		return 0, err
	}
	return b.chunk, nil
}

// CheckFormat reports whether audio with this rate and channel count can
// be scored as it is: ErrNotMono for several channels, ErrSampleRate for a
// rate without a branch.
func (m *Model) CheckFormat(rate, channels int) error {
	if channels != 1 {
		return fmt.Errorf("%w: %d channels (mix down to one first)", ErrNotMono, channels)
	}
	_, err := m.branch(rate)
	return err
}

func (m *Model) branch(rate int) (*branch, error) {
	if b := m.branches[rate]; b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("%w: %d Hz (the model takes %v; resample first)", ErrSampleRate, rate, m.SampleRates())
}
