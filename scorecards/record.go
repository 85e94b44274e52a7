package scorecards

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/procstat"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
)

// RecordEngine fills the card from the engine the run's models used: the
// backend's name, device, dispatch count and peak buffer bytes
// (device_peak_bytes, omitted when the backend keeps no count), and the
// engine's programs compiled, graphs built and host<->device transfers.
// Call it when the run is over: the counters are cumulative.
func (c *Card) RecordEngine(e *graph.Engine) {
	b := e.Backend()
	c.Backend, c.Device = b.Name(), b.Device()
	ks := b.Stats()
	c.Dispatches = Int(ks.Dispatches)
	c.DevicePeakBytes = nil
	if ks.PeakBytes > 0 {
		c.DevicePeakBytes = Int(ks.PeakBytes)
	}
	gs := e.Stats()
	c.ProgramsCompiled = Int(gs.Compiles)
	c.GraphBuilds = Int(gs.GraphBuilds)
	c.Transfers = Int(gs.Transfers)
	c.TransferBytes = Int(gs.TransferBytes)
}

// RecordRun fills the card when a run is over: the pipeline's metrics
// (Record), the engine's counters (RecordEngine) and the process's peak
// resident memory so far.
func (c *Card) RecordRun(m pipeline.Metrics, e *graph.Engine) {
	c.Record(m)
	c.RecordEngine(e)
	if peak := procstat.PeakRSS(); peak > 0 {
		c.PeakBytes = Int(peak)
	}
}

// Record fills the card from a finished pipeline's metrics: start time, wall
// time, time to first output (when the run produced any) and one row per
// stage; it updates the RTF if the audio length is already set. Call it
// again after a later stage of the program to overwrite.
func (c *Card) Record(m pipeline.Metrics) {
	if !m.Started.IsZero() {
		c.StartedAt = m.Started.UTC()
	}
	if c.Pipeline == "" {
		c.Pipeline = m.Name
	}
	if d := m.TimeToFirstOutput(); d > 0 {
		c.TTFAMs = ms(d)
	}
	c.Stages = Stages(m)
	c.SetWall(m.Wall)
}

// Stages returns the scorecard rows for a pipeline's stages, in order.
func Stages(m pipeline.Metrics) []Stage {
	rows := make([]Stage, 0, len(m.Stages))
	for _, s := range m.Stages {
		rows = append(rows, StageOf(s))
	}
	return rows
}

// StageOf returns the scorecard row for one stage's metrics. Inputs are
// omitted for sources, outputs for sinks, latency for a stage that
// finished no frame.
func StageOf(s stage.Stats) Stage {
	row := Stage{Name: s.Name, BusyMs: ms(s.Busy)}
	if s.Kind.HasInput() {
		row.FramesIn = Int(s.FramesIn)
		row.WaitInMs = ms(s.WaitIn)
		row.QueueMax = Int(int64(s.QueueMax))
	}
	if s.Kind.HasOutput() {
		row.FramesOut = Int(s.FramesOut)
		row.WaitOutMs = ms(s.WaitOut)
	}
	if s.Latency.Count > 0 {
		row.LatencyP50Ms = ms(s.Latency.P50)
		row.LatencyP95Ms = ms(s.Latency.P95)
		row.LatencyMaxMs = ms(s.Latency.Max)
	}
	return row
}
