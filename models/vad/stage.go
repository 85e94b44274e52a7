package vad

import (
	"context"
	"fmt"
	"time"

	"github.com/tensorforge/forge/dsp/frame"
	"github.com/tensorforge/forge/stage"
)

// Speech is a detected stretch of speech with its samples.
type Speech struct {
	Segment           // sample offsets in the stream, [Start, End)
	Rate    int       // sample rate of the offsets and the audio
	Audio   []float32 // the samples of [Start, End); owned by the receiver
}

// Processor is the VAD as a pipeline stage body: it takes mono PCM frames
// of any length, scores them chunk by chunk, and emits each speech segment
// with its audio as soon as the segment is final; Flush scores the last
// partial chunk (zero-padded) and emits the segment still open. Output
// frames carry the segment's start as Offset and the Entered time of the
// input frame holding that start. It keeps the audio of the open segment
// only. It implements stage.Processor and stage.Flusher.
type Processor struct {
	det    *Detector
	seg    *Segmenter
	rate   int
	framer *frame.Framer // cuts the PCM into detector chunks
	onPCM  frame.Emit    // p.chunk, bound once (a method value per call would allocate)
	total  int64         // samples received (positions count from the first)
	base   int64         // Offset of the first frame
	begun  bool

	// what the chunk callback needs during Process/Flush
	ctx  context.Context
	emit stage.Emit[Speech]

	hist      []float32 // audio from histStart up to total
	histStart int64
	marks     []mark // entry times of the frames still in hist
	out       []Segment
}

// mark records when the frame starting at offset entered the pipeline.
type mark struct {
	offset  int64
	entered time.Time
}

// NewProcessor returns a processor for one stream at rate with the given
// post-processing options. Close it (Flush does) to return its detector.
func (m *Model) NewProcessor(ctx context.Context, rate int, opt Options) (*Processor, error) {
	d, err := m.NewDetector(ctx, rate)
	if err != nil {
		return nil, err
	}
	s, err := NewSegmenter(rate, d.ChunkSize(), opt)
	if err != nil {
		d.Close()
		return nil, err
	}
	fr, err := frame.New(d.ChunkSize())
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("vad: %w", err)
	}
	p := &Processor{det: d, seg: s, rate: rate, framer: fr}
	p.onPCM = p.chunk
	return p, nil
}

// NewStage wraps a new processor as a stage named name: PCM frames
// ([]float32 at rate) in, Speech out.
func (m *Model) NewStage(ctx context.Context, name string, rate int, opt Options) (*stage.Stage[[]float32, Speech], error) {
	p, err := m.NewProcessor(ctx, rate, opt)
	if err != nil {
		return nil, err
	}
	return stage.Process[[]float32, Speech](name, p), nil
}

// Process implements stage.Processor.
func (p *Processor) Process(ctx context.Context, f stage.Frame[[]float32], emit stage.Emit[Speech]) error {
	if p.det == nil {
		return ErrClosed
	}
	if f.Rate != 0 && f.Rate != p.rate {
		return fmt.Errorf("%w: frame at %d Hz, the detector runs at %d Hz (resample before the VAD)", ErrSampleRate, f.Rate, p.rate)
	}
	if !p.begun {
		p.begun, p.base = true, f.Offset
	}
	if len(f.Payload) > 0 {
		p.marks = append(p.marks, mark{p.total, f.Entered})
		p.hist = append(p.hist, f.Payload...)
	}
	p.total += int64(len(f.Payload))
	p.ctx, p.emit = ctx, emit
	err := p.framer.Push(f.Payload, p.onPCM)
	p.ctx, p.emit = nil, nil
	return err
}

// chunk scores one detector chunk (a frame.Emit).
func (p *Processor) chunk(pcm []float32, offset int64) error {
	return p.score(p.ctx, pcm, p.emit)
}

// score runs the detector on the full chunk and emits what became final.
func (p *Processor) score(ctx context.Context, pcm []float32, emit stage.Emit[Speech]) error {
	prob, err := p.det.Prob(ctx, pcm)
	if err != nil {
		return fmt.Errorf("vad: chunk at sample %d: %w", p.seg.i*p.seg.window, err)
	}
	p.out = p.seg.Push(prob, p.out[:0])
	if err := p.send(emit); err != nil {
		return err
	}
	p.trim(p.seg.Horizon())
	return nil
}

// Flush implements stage.Flusher: it scores the partial last chunk, emits
// the remaining segments and closes the processor.
func (p *Processor) Flush(ctx context.Context, emit stage.Emit[Speech]) error {
	if p.det == nil {
		return ErrClosed
	}
	defer p.Close()
	p.ctx, p.emit = ctx, emit
	_, err := p.framer.Flush(p.onPCM) // the last partial chunk, zero-padded
	p.ctx, p.emit = nil, nil
	if err != nil {
		return err
	}
	p.out = p.seg.Flush(p.total, p.out[:0])
	return p.send(emit)
}

// Close returns the detector to the model. Flush calls it.
func (p *Processor) Close() {
	if p.det != nil {
		p.det.Close()
		p.det = nil
	}
}

func (p *Processor) send(emit stage.Emit[Speech]) error {
	for _, s := range p.out {
		lo, hi := s.Start-p.histStart, s.End-p.histStart
		if lo < 0 || hi > int64(len(p.hist)) || lo > hi {
			return fmt.Errorf("vad: internal: segment %v outside the kept audio [%d, %d)", s, p.histStart, p.histStart+int64(len(p.hist)))
		}
		sp := Speech{Segment: s, Rate: p.rate, Audio: append([]float32(nil), p.hist[lo:hi]...)}
		if err := emit(stage.Frame[Speech]{Offset: p.base + s.Start, Rate: p.rate, Entered: p.enteredAt(s.Start), Payload: sp}); err != nil {
			return err
		}
	}
	return nil
}

// enteredAt returns the entry time of the frame holding sample pos.
func (p *Processor) enteredAt(pos int64) time.Time {
	var t time.Time
	for _, m := range p.marks {
		if m.offset > pos {
			break
		}
		t = m.entered
	}
	return t
}

// trim drops the audio before sample keep, copying the rest down once the
// dead prefix outweighs it (amortised O(1) per sample).
func (p *Processor) trim(keep int64) {
	dead := min(keep-p.histStart, int64(len(p.hist)))
	if dead <= 0 || dead < int64(len(p.hist))/2 {
		return
	}
	n := copy(p.hist, p.hist[dead:])
	p.hist = p.hist[:n]
	p.histStart += dead
	// Keep the mark of the frame that holds histStart.
	k := 0
	for k+1 < len(p.marks) && p.marks[k+1].offset <= p.histStart {
		k++
	}
	p.marks = p.marks[:copy(p.marks, p.marks[k:])]
}
