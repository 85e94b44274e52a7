package pipeline

import (
	"time"

	"github.com/tensorforge/forge/stage"
)

// Metrics is a snapshot of a pipeline's run: the per-stage numbers plus the
// end-to-end view the scorecard's TTFA and latency come from.
type Metrics struct {
	Name string
	// Started is when Start was called; zero before.
	Started time.Time
	// Wall is the run's duration: final once Finished, so far otherwise.
	Wall     time.Duration
	Finished bool
	// FirstIn is the Entered time of the first frame any source or inlet
	// produced; FirstOut is when any sink or outlet first finished a frame.
	FirstIn, FirstOut time.Time
	// EndToEnd merges the end-to-end latency of every sink and outlet.
	EndToEnd stage.Summary
	// Stages holds each stage's metrics in the order they were added.
	Stages []stage.Stats
}

// TimeToFirstOutput is FirstOut − FirstIn: text accepted → first audio out
// for synthesis, first audio in → first text out for recognition. It is 0
// when either end has not happened yet.
func (m Metrics) TimeToFirstOutput() time.Duration {
	if m.FirstIn.IsZero() || m.FirstOut.IsZero() {
		return 0
	}
	return m.FirstOut.Sub(m.FirstIn)
}

// Stage returns the metrics of the stage called name.
func (m Metrics) Stage(name string) (stage.Stats, bool) {
	for _, s := range m.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return stage.Stats{}, false
}

// Metrics returns a snapshot of the pipeline's metrics; it may be called
// while the pipeline runs.
func (p *Pipeline) Metrics() Metrics {
	m := Metrics{Name: p.name, Stages: make([]stage.Stats, 0, len(p.nodes))}
	if p.live.Load() {
		m.Started = p.started
		select {
		case <-p.done:
			m.Finished = true
			m.Wall = time.Duration(p.wall.Load())
		default:
			m.Wall = time.Since(p.started)
		}
	}
	var e2e stage.Histogram
	for _, n := range p.nodes {
		s := n.m.Snapshot()
		m.Stages = append(m.Stages, s)
		switch s.Kind {
		case stage.KindSource:
			if !s.FirstIn.IsZero() && (m.FirstIn.IsZero() || s.FirstIn.Before(m.FirstIn)) {
				m.FirstIn = s.FirstIn
			}
		case stage.KindSink:
			if !s.FirstOut.IsZero() && (m.FirstOut.IsZero() || s.FirstOut.Before(m.FirstOut)) {
				m.FirstOut = s.FirstOut
			}
			e2e.Merge(n.m.EndToEnd())
		}
	}
	m.EndToEnd = e2e.Summary()
	return m
}
