package scorecards

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// ValidationError lists everything wrong with a card: the required fields it
// lacks (as JSON paths such as "host.cores") and the values that are out of
// range.
type ValidationError struct {
	Missing  []string
	Problems []string
}

// Error implements error.
func (e *ValidationError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing required fields: "+strings.Join(e.Missing, ", "))
	}
	if len(e.Problems) > 0 {
		parts = append(parts, "invalid: "+strings.Join(e.Problems, "; "))
	}
	return "scorecard " + strings.Join(parts, "; ")
}

func (e *ValidationError) missing(path string) { e.Missing = append(e.Missing, path) }

func (e *ValidationError) bad(format string, args ...any) {
	e.Problems = append(e.Problems, fmt.Sprintf(format, args...))
}

func (e *ValidationError) orNil() error {
	if len(e.Missing) == 0 && len(e.Problems) == 0 {
		return nil
	}
	// The JSON presence check and the typed check can both see one gap.
	seen := map[string]bool{}
	uniq := e.Missing[:0]
	for _, m := range e.Missing {
		if !seen[m] {
			seen[m] = true
			uniq = append(uniq, m)
		}
	}
	e.Missing = uniq
	return e
}

// Validate checks that the card has every required field (schema, run_id,
// started_at, pipeline, host.os, host.arch, host.cores, host.go,
// wall_seconds, a name for each model and stage) and that its numbers are
// finite and in range. It returns a *ValidationError naming every problem.
func (c *Card) Validate() error {
	e := &ValidationError{}
	c.check(e)
	return e.orNil()
}

func (c *Card) check(e *ValidationError) {
	switch {
	case c.Schema == "":
		e.missing("schema")
	case c.Schema != Schema:
		e.bad("schema is %q, this reader understands %q", c.Schema, Schema)
	}
	if c.RunID == "" {
		e.missing("run_id")
	}
	if c.StartedAt.IsZero() {
		e.missing("started_at")
	}
	if c.Pipeline == "" {
		e.missing("pipeline")
	}
	if c.Host.OS == "" {
		e.missing("host.os")
	}
	if c.Host.Arch == "" {
		e.missing("host.arch")
	}
	if c.Host.Cores == 0 {
		e.missing("host.cores")
	} else if c.Host.Cores < 0 {
		e.bad("host.cores is %d", c.Host.Cores)
	}
	if c.Host.Go == "" {
		e.missing("host.go")
	}
	nonNeg(e, "wall_seconds", &c.WallSeconds)
	nonNeg(e, "audio_in_seconds", c.AudioInSeconds)
	nonNeg(e, "audio_out_seconds", c.AudioOutSeconds)
	nonNeg(e, "rtf", c.RTF)
	nonNeg(e, "ttfa_ms", c.TTFAMs)
	nonNegInt(e, "dispatches", c.Dispatches)
	nonNegInt(e, "peak_bytes", c.PeakBytes)
	nonNegInt(e, "device_peak_bytes", c.DevicePeakBytes)
	nonNegInt(e, "programs_compiled", c.ProgramsCompiled)
	nonNegInt(e, "graph_builds", c.GraphBuilds)
	nonNegInt(e, "transfers", c.Transfers)
	nonNegInt(e, "transfer_bytes", c.TransferBytes)
	for i, m := range c.Models {
		if m.Name == "" {
			e.missing(fmt.Sprintf("models[%d].name", i))
		}
		if m.SHA256 != "" && !isSHA256(m.SHA256) {
			e.bad("models[%d].sha256 %q is not 64 hex digits", i, m.SHA256)
		}
	}
	seen := map[string]bool{}
	for i, s := range c.Stages {
		p := fmt.Sprintf("stages[%d]", i)
		if s.Name == "" {
			e.missing(p + ".name")
		} else if seen[s.Name] {
			e.bad("%s: stage name %q repeats", p, s.Name)
		}
		seen[s.Name] = true
		nonNegInt(e, p+".frames_in", s.FramesIn)
		nonNegInt(e, p+".frames_out", s.FramesOut)
		nonNegInt(e, p+".queue_max", s.QueueMax)
		nonNeg(e, p+".busy_ms", s.BusyMs)
		nonNeg(e, p+".wait_in_ms", s.WaitInMs)
		nonNeg(e, p+".wait_out_ms", s.WaitOutMs)
		nonNeg(e, p+".latency_p50_ms", s.LatencyP50Ms)
		nonNeg(e, p+".latency_p95_ms", s.LatencyP95Ms)
		nonNeg(e, p+".latency_max_ms", s.LatencyMaxMs)
		if s.LatencyP50Ms != nil && s.LatencyP95Ms != nil && s.LatencyMaxMs != nil &&
			!(*s.LatencyP50Ms <= *s.LatencyP95Ms && *s.LatencyP95Ms <= *s.LatencyMaxMs) {
			e.bad("%s: latency p50 %v ≤ p95 %v ≤ max %v does not hold", p, *s.LatencyP50Ms, *s.LatencyP95Ms, *s.LatencyMaxMs)
		}
	}
}

func nonNeg(e *ValidationError, path string, v *float64) {
	if v == nil {
		return
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
		e.bad("%s is %v, want a finite number ≥ 0", path, *v)
	}
}

func nonNegInt(e *ValidationError, path string, v *int64) {
	if v != nil && *v < 0 {
		e.bad("%s is %d, want ≥ 0", path, *v)
	}
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}

// required lists the keys that must be present in the JSON itself (a
// present zero, such as "wall_seconds": 0, is valid; an absent key is not).
var required = []string{"schema", "run_id", "started_at", "pipeline", "host", "wall_seconds"}

var requiredHost = []string{"os", "arch", "cores", "go"}

// checkPresence records required keys absent (or null) in a card's JSON.
func checkPresence(e *ValidationError, raw map[string]json.RawMessage) {
	for _, k := range required {
		if v, ok := raw[k]; !ok || string(v) == "null" {
			e.missing(k)
		}
	}
	h, ok := raw["host"]
	if !ok || string(h) == "null" {
		return
	}
	var host map[string]json.RawMessage
	if err := json.Unmarshal(h, &host); err != nil {
		return // the typed decode reports it
	}
	for _, k := range requiredHost {
		if v, ok := host[k]; !ok || string(v) == "null" {
			e.missing("host." + k)
		}
	}
}
