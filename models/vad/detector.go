package vad

import (
	"context"
	"fmt"
	"math"

	"github.com/tensorforge/forge/graph"
)

// runner is a compiled per-stream program with its LSTM state. Programs are
// compiled against one graph.State, so a runner is recycled whole through
// the model when its detector closes: a service that opens and closes
// detectors compiles only as many programs as it ever runs at once.
type runner struct {
	b    *branch
	prog *graph.Program
	st   *graph.State
	x    graph.Tensor // the [1, context+chunk] input placeholder
}

func (m *Model) newRunner(ctx context.Context, b *branch) (*runner, error) {
	st, err := m.eng.NewState(fmt.Sprintf("vad%d.state", b.rate), graph.F32, graph.Shape{2, 1, Hidden})
	if err != nil {
		return nil, fmt.Errorf("vad: %w", err)
	}
	g := graph.New()
	x := g.Input("input", graph.F32, graph.Shape{1, b.context + b.chunk})
	s := g.ReadState(st)
	prob, hN, cN := b.forward(x, s.Slice(0, 0, 1), s.Slice(0, 1, 2))
	// stateN = concat(hN, cN), written in place after the step.
	prog, err := m.eng.Compile(ctx, prob, g.Assign(st, hN, 0, 0), g.Assign(st, cN, 0, 1))
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("vad: compile %d Hz: %w", b.rate, err)
	}
	return &runner{b: b, prog: prog, st: st, x: x}, nil
}

func (r *runner) close() {
	r.prog.Close()
	r.st.Close()
}

// getRunner takes a recycled runner for rate or compiles a new one.
func (m *Model) getRunner(ctx context.Context, b *branch) (*runner, error) {
	m.mu.Lock()
	if m.close {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if l := m.idle[b.rate]; len(l) > 0 {
		r := l[len(l)-1]
		m.idle[b.rate] = l[:len(l)-1]
		m.mu.Unlock()
		return r, nil
	}
	m.mu.Unlock()
	return m.newRunner(ctx, b)
}

func (m *Model) putRunner(r *runner) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.close {
		r.close()
		return
	}
	m.idle[r.b.rate] = append(m.idle[r.b.rate], r)
}

// getFast takes recycled fast-path buffers for one stream of net's rate or
// lays out new ones.
func (m *Model) getFast(net *fastNet) (*fastStreams, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.close {
		return nil, ErrClosed
	}
	if l := m.idleFast[net.b.rate]; len(l) > 0 {
		fs := l[len(l)-1]
		m.idleFast[net.b.rate] = l[:len(l)-1]
		return fs, nil
	}
	return newFastStreams(net, 1), nil
}

func (m *Model) putFast(fs *fastStreams) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.close {
		m.idleFast[fs.net.b.rate] = append(m.idleFast[fs.net.b.rate], fs)
	}
}

// Detector scores one audio stream chunk by chunk, carrying the LSTM state
// and the last samples of context from call to call exactly as Silero's
// OnnxWrapper does. It is not safe for concurrent use: one goroutine per
// detector. Close returns its resources to the Model.
type Detector struct {
	m   *Model
	b   *branch
	r   *runner      // the compiled program, or nil on the fast path
	fs  *fastStreams // the fast path's buffers, or nil
	in  []float32    // context followed by the new chunk, as the program reads it
	out [1]float32
}

// NewDetector returns a detector for a stream at rate (16000, or 8000 when
// the weights carry that branch), starting from silence: zero state and
// zero context.
func (m *Model) NewDetector(ctx context.Context, rate int) (*Detector, error) {
	b, err := m.branch(rate)
	if err != nil {
		return nil, err
	}
	d := &Detector{m: m, b: b}
	if net := m.fast[b.rate]; net != nil {
		if d.fs, err = m.getFast(net); err != nil {
			return nil, err
		}
	} else {
		if d.r, err = m.getRunner(ctx, b); err != nil {
			return nil, err
		}
		d.in = make([]float32, b.context+b.chunk)
	}
	if err := d.Reset(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// SampleRate returns the rate the detector scores.
func (d *Detector) SampleRate() int { return d.b.rate }

// ChunkSize returns the number of new samples Prob takes (512 at 16 kHz,
// 256 at 8 kHz).
func (d *Detector) ChunkSize() int { return d.b.chunk }

// Reset starts a new stream: zero LSTM state and zero context.
func (d *Detector) Reset(ctx context.Context) error {
	if d.fs != nil {
		d.fs.reset()
		return nil
	}
	if d.r == nil {
		return ErrClosed
	}
	clear(d.in)
	if err := d.r.st.Reset(ctx); err != nil {
		return fmt.Errorf("vad: reset: %w", err)
	}
	return nil
}

// Prob scores the next chunk of exactly ChunkSize samples (a last, short
// chunk of a stream is zero-padded by the caller, as Silero does) and
// returns the probability that it holds speech. It allocates nothing.
func (d *Detector) Prob(ctx context.Context, chunk []float32) (float32, error) {
	r := d.r
	if r == nil && d.fs == nil {
		return 0, ErrClosed
	}
	if len(chunk) != d.b.chunk {
		return 0, fmt.Errorf("%w: got %d samples, want %d at %d Hz", ErrChunkSize, len(chunk), d.b.chunk, d.b.rate)
	}
	if i := nonFinite(chunk); i >= 0 {
		return 0, fmt.Errorf("%w: sample %d of the chunk is %v", ErrNotFinite, i, chunk[i])
	}
	if d.fs != nil {
		copy(d.fs.input(0), chunk)
		d.fs.step(d.out[:])
		return d.out[0], nil
	}
	copy(d.in[r.b.context:], chunk)
	if err := r.prog.SetF32(ctx, r.x, d.in); err != nil {
		return 0, fmt.Errorf("vad: %w", err)
	}
	if err := r.prog.Run(ctx); err != nil {
		return 0, fmt.Errorf("vad: %w", err)
	}
	if err := r.prog.ReadF32(ctx, 0, d.out[:]); err != nil {
		return 0, fmt.Errorf("vad: %w", err)
	}
	// The next call's context is the end of this call's input.
	copy(d.in[:r.b.context], d.in[len(d.in)-r.b.context:])
	return d.out[0], nil
}

// Close hands the detector's program and state back to the model for the
// next NewDetector. The detector must not be used afterwards.
func (d *Detector) Close() {
	if d.r != nil {
		d.m.putRunner(d.r)
		d.r = nil
	}
	if d.fs != nil {
		d.m.putFast(d.fs)
		d.fs = nil
	}
}

// Probs scores a whole clip of mono samples at rate with a fresh stream
// state: one probability per chunk, the last partial chunk zero-padded
// (Silero's get_speech_timestamps and audio_forward do the same).
func (m *Model) Probs(ctx context.Context, samples []float32, rate int) ([]float32, error) {
	if len(samples) == 0 {
		return nil, ErrEmptyAudio
	}
	d, err := m.NewDetector(ctx, rate)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	n := d.ChunkSize()
	probs := make([]float32, 0, (len(samples)+n-1)/n)
	last := make([]float32, n)
	for off := 0; off < len(samples); off += n {
		chunk := samples[off:min(off+n, len(samples))]
		if len(chunk) < n {
			copy(last, chunk)
			chunk = last
		}
		p, err := d.Prob(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("vad: chunk at sample %d: %w", off, err)
		}
		probs = append(probs, p)
	}
	return probs, nil
}

// Detect runs the model over a whole clip of mono samples at rate and
// returns its speech segments in samples, as get_speech_timestamps does.
func (m *Model) Detect(ctx context.Context, samples []float32, rate int, opt Options) ([]Segment, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	probs, err := m.Probs(ctx, samples, rate)
	if err != nil {
		return nil, err
	}
	b, err := m.branch(rate)
	if err != nil {
		return nil, err
	}
	return Segments(probs, int64(len(samples)), rate, b.chunk, opt)
}

// nonFinite returns the index of the first NaN or infinite sample, or −1.
// v − v is 0 for every finite v and NaN otherwise, so four running sums
// of it check a chunk without a branch per sample (the per-sample test
// cost as much as a tenth of a fast-path chunk).
func nonFinite(x []float32) int {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		q := x[i : i+4 : i+4]
		s0 += q[0] - q[0]
		s1 += q[1] - q[1]
		s2 += q[2] - q[2]
		s3 += q[3] - q[3]
	}
	for _, v := range x[i:] {
		s0 += v - v
	}
	if s0+s1+s2+s3 == 0 {
		return -1
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}
