package stage

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Kind says what shape of stage recorded a set of metrics, so that readers
// know which fields apply (a source has no input queue, a sink no output).
type Kind string

// The kinds of stage.
const (
	KindSource  Kind = "source"
	KindMap     Kind = "map"
	KindFlatMap Kind = "flatmap"
	KindBatch   Kind = "batch"
	KindSink    Kind = "sink"
	KindTee     Kind = "tee"
	KindMerge   Kind = "merge"
)

// HasInput reports whether stages of this kind receive frames.
func (k Kind) HasInput() bool { return k != KindSource }

// HasOutput reports whether stages of this kind send frames.
func (k Kind) HasOutput() bool { return k != KindSink }

// Metrics is what one stage records while it runs. All fields are updated
// with atomics, so a snapshot may be taken at any time from any goroutine;
// recording allocates nothing.
type Metrics struct {
	name string
	kind Kind

	framesIn  atomic.Int64
	framesOut atomic.Int64
	busy      atomic.Int64 // ns spent doing the stage's own work
	waitIn    atomic.Int64 // ns blocked waiting for input
	waitOut   atomic.Int64 // ns blocked waiting for downstream to take output
	queueMax  atomic.Int64 // high-water mark of the input queue
	queueCap  atomic.Int64
	firstIn   atomic.Int64 // clock reading + 1 of the first input; 0 = none yet
	firstOut  atomic.Int64 // clock reading + 1 of the first output; 0 = none yet

	latency  Histogram // time a frame spent inside this stage
	endToEnd Histogram // sinks only: time since the frame entered the pipeline
}

// NewMetrics returns empty metrics for the stage called name.
func NewMetrics(name string, kind Kind) *Metrics {
	return &Metrics{name: name, kind: kind}
}

// Name returns the name of the stage the metrics belong to.
func (m *Metrics) Name() string { return m.name }

// Kind returns the kind of stage the metrics belong to.
func (m *Metrics) Kind() Kind { return m.kind }

// SetQueueCap records the capacity of the stage's input queue, so a report
// can show the high-water mark against it.
func (m *Metrics) SetQueueCap(n int) { m.queueCap.Store(int64(n)) }

// observeQueue records the depth of the input queue seen before a receive.
func (m *Metrics) observeQueue(n int) {
	v := int64(n)
	for {
		cur := m.queueMax.Load()
		if v <= cur || m.queueMax.CompareAndSwap(cur, v) {
			return
		}
	}
}

// markOnce stores clock reading t into slot unless it is set.
func (m *Metrics) markOnce(slot *atomic.Int64, t tick) {
	if slot.Load() == 0 {
		slot.CompareAndSwap(0, int64(t)+1)
	}
}

func (m *Metrics) timeOf(slot *atomic.Int64) time.Time {
	v := slot.Load()
	if v == 0 {
		return time.Time{}
	}
	return wallAt(tick(v - 1))
}

// took records one input frame taken at began after waiting for it.
func (m *Metrics) took(began tick, waited time.Duration) {
	if waited > 0 {
		m.waitIn.Add(int64(waited))
	}
	m.framesIn.Add(1)
	m.markOnce(&m.firstIn, began)
}

// gave records one output frame handed on at now, after blocking for
// blocked; the work on it began at began.
func (m *Metrics) gave(began, at tick, blocked time.Duration) {
	if blocked > 0 {
		m.waitOut.Add(int64(blocked))
	}
	m.framesOut.Add(1)
	m.latency.Record(at - began)
	m.markOnce(&m.firstOut, at)
}

func (m *Metrics) addBusy(d time.Duration) { m.busy.Add(int64(d)) }

// Snapshot returns the metrics recorded so far.
func (m *Metrics) Snapshot() Stats {
	return Stats{
		Name:      m.name,
		Kind:      m.kind,
		FramesIn:  m.framesIn.Load(),
		FramesOut: m.framesOut.Load(),
		Busy:      time.Duration(m.busy.Load()),
		WaitIn:    time.Duration(m.waitIn.Load()),
		WaitOut:   time.Duration(m.waitOut.Load()),
		QueueMax:  int(m.queueMax.Load()),
		QueueCap:  int(m.queueCap.Load()),
		FirstIn:   m.timeOf(&m.firstIn),
		FirstOut:  m.timeOf(&m.firstOut),
		Latency:   m.latency.Summary(),
		EndToEnd:  m.endToEnd.Summary(),
	}
}

// EndToEnd returns the histogram of end-to-end latencies recorded by a sink
// (empty for other kinds), for merging across sinks.
func (m *Metrics) EndToEnd() *Histogram { return &m.endToEnd }

// Stats is a snapshot of one stage's metrics.
type Stats struct {
	Name string
	Kind Kind
	// FramesIn counts frames received; FramesOut counts frames sent (for a
	// tee, one per output; for a sink, frames fully consumed).
	FramesIn, FramesOut int64
	// Busy is time spent in the stage's own work; WaitIn time blocked on an
	// empty input queue; WaitOut time blocked on a full output queue.
	Busy, WaitIn, WaitOut time.Duration
	// QueueMax is the deepest the input queue was seen; QueueCap its size.
	QueueMax, QueueCap int
	// FirstIn is when the first frame arrived (for a source: when its first
	// frame entered the pipeline); FirstOut when the first frame left (for a
	// sink: when it finished consuming it). Zero when it has not happened.
	FirstIn, FirstOut time.Time
	// Latency is the time from a frame's arrival until the output derived
	// from it was handed on (for batches, from the batch's first frame).
	Latency Summary
	// EndToEnd, for sinks, is the time from a frame's Entered stamp until the
	// sink finished with it.
	EndToEnd Summary
}

// Summary is a latency distribution reduced to the numbers a scorecard needs.
type Summary struct {
	Count         int64
	P50, P95, Max time.Duration
}

// Histogram is a fixed-size log-linear histogram of durations: 16 buckets per
// power of two (quantiles within 1/16 of exact), from 1 ns to about 18 minutes
// (longer values land in the last bucket; Max is exact). The zero value is
// ready to use and safe for concurrent recording.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64
}

const (
	histSubBits = 4
	histSub     = 1 << histSubBits
	histMaxExp  = 40 // values at or above 2^40 ns share the last bucket
	histBuckets = histSub + (histMaxExp-histSubBits)*histSub
)

// histIndex maps a non-negative value to its bucket. Values below histSub
// have a bucket each; above, the bucket is the exponent and the next
// histSubBits bits of the mantissa.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // position of the top bit, >= histSubBits
	if e >= histMaxExp {
		return histBuckets - 1
	}
	m := int(v>>(e-histSubBits)) & (histSub - 1)
	return histSub + (e-histSubBits)*histSub + m
}

// histBounds returns the smallest value of bucket i and its width.
func histBounds(i int) (lo, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	e := (i-histSub)/histSub + histSubBits
	m := uint64((i - histSub) % histSub)
	width = 1 << (e - histSubBits)
	return 1<<e + m*width, width
}

// Record adds one observation. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d))].Add(1)
	for {
		cur := h.max.Load()
		if int64(d) <= cur || h.max.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// Merge adds every observation of o into h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	for {
		cur, om := h.max.Load(), o.max.Load()
		if om <= cur || h.max.CompareAndSwap(cur, om) {
			return
		}
	}
}

// Count returns the number of observations.
func (h *Histogram) Count() int64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return int64(n)
}

// Quantile returns an estimate of the q-quantile (0 ≤ q ≤ 1): the top of
// the bucket holding the observation of rank ⌈q·n⌉, capped at the maximum.
// Latency is never under-reported; the estimate is at most 1/16 above the
// exact quantile. It returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	var counts [histBuckets]uint64
	var n uint64
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		n += counts[i]
	}
	return quantile(&counts, n, q, h.max.Load())
}

func quantile(counts *[histBuckets]uint64, n uint64, q float64, maxv int64) time.Duration {
	if n == 0 {
		return 0
	}
	if q <= 0 {
		q = 0
	}
	if q >= 1 {
		return time.Duration(maxv)
	}
	rank := uint64(q*float64(n) + 0.999999999)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			lo, w := histBounds(i)
			v := int64(lo + w - 1)
			if v > maxv {
				v = maxv
			}
			return time.Duration(v)
		}
	}
	return time.Duration(maxv)
}

// Summary returns count, median, 95th percentile and maximum.
func (h *Histogram) Summary() Summary {
	var counts [histBuckets]uint64
	var n uint64
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		n += counts[i]
	}
	maxv := h.max.Load()
	return Summary{
		Count: int64(n),
		P50:   quantile(&counts, n, 0.50, maxv),
		P95:   quantile(&counts, n, 0.95, maxv),
		Max:   time.Duration(maxv),
	}
}
