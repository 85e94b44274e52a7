package scorecards

import (
	"crypto/rand"
	"encoding/hex"
	"math"
	"strconv"
	"time"
)

// Schema is the version string every card carries in its "schema" key.
const Schema = "forge.scorecard/v1"

// Card is one run's scorecard.
type Card struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	Pipeline  string    `json:"pipeline"`
	Models    []Model   `json:"models,omitempty"`
	Backend   string    `json:"backend,omitempty"`
	Device    string    `json:"device,omitempty"`
	Host      Host      `json:"host"`
	// AudioInSeconds is the length of the audio the run consumed (listen);
	// AudioOutSeconds of the audio it produced (say).
	AudioInSeconds  *float64 `json:"audio_in_seconds,omitempty"`
	AudioOutSeconds *float64 `json:"audio_out_seconds,omitempty"`
	WallSeconds     float64  `json:"wall_seconds"`
	// RTF is the real-time factor, wall seconds over audio seconds (below 1
	// is faster than real time).
	RTF *float64 `json:"rtf,omitempty"`
	// TTFAMs is the time to first output in milliseconds: text accepted →
	// first audio out for synthesis, first audio in → first text out for
	// recognition.
	TTFAMs *float64 `json:"ttfa_ms,omitempty"`
	Stages []Stage  `json:"stages,omitempty"`
	// Dispatches counts the backend's kernel launches. PeakBytes is the
	// run's peak memory: the CLIs record the process's peak resident set
	// (weights, buffers and all), which is what a user sizes a machine by.
	// DevicePeakBytes is the backend's own high-water mark of live buffer
	// bytes (kernels.Stats.PeakBytes): on a GPU, device memory, which the
	// resident set does not show; on the CPU backend, the part of the
	// resident set that its buffers took.
	Dispatches      *int64 `json:"dispatches,omitempty"`
	PeakBytes       *int64 `json:"peak_bytes,omitempty"`
	DevicePeakBytes *int64 `json:"device_peak_bytes,omitempty"`
	// ProgramsCompiled counts the programs the graph engine compiled (its
	// cache misses) and GraphBuilds the graphs model code built and handed
	// to it, over the whole run, loading and warm-up included: a decoder
	// that builds its step once keeps both independent of the number of
	// tokens.
	ProgramsCompiled *int64 `json:"programs_compiled,omitempty"`
	GraphBuilds      *int64 `json:"graph_builds,omitempty"`
	// Transfers counts the copies between the backend and the host that
	// programs partitioned for a backend without every op made, and
	// TransferBytes their size: 0 when the backend ran every step.
	Transfers     *int64            `json:"transfers,omitempty"`
	TransferBytes *int64            `json:"transfer_bytes,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
}

// Model identifies the weights a run used.
type Model struct {
	Name    string `json:"name"`
	Variant string `json:"variant,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

// Host describes the machine a run was measured on.
type Host struct {
	OS    string `json:"os"`
	Arch  string `json:"arch"`
	CPU   string `json:"cpu,omitempty"`
	Cores int    `json:"cores"`
	Go    string `json:"go"`
}

// Stage is one stage's row: the pipeline's per-stage metrics. Fields that do
// not apply to a stage (a source's input, a sink's output, the latency of a
// stage that handled no frame) are omitted.
type Stage struct {
	Name         string   `json:"name"`
	FramesIn     *int64   `json:"frames_in,omitempty"`
	FramesOut    *int64   `json:"frames_out,omitempty"`
	BusyMs       *float64 `json:"busy_ms,omitempty"`
	WaitInMs     *float64 `json:"wait_in_ms,omitempty"`
	WaitOutMs    *float64 `json:"wait_out_ms,omitempty"`
	LatencyP50Ms *float64 `json:"latency_p50_ms,omitempty"`
	LatencyP95Ms *float64 `json:"latency_p95_ms,omitempty"`
	LatencyMaxMs *float64 `json:"latency_max_ms,omitempty"`
	QueueMax     *int64   `json:"queue_max,omitempty"`
}

// Float returns a pointer to v, for optional fields.
func Float(v float64) *float64 { return &v }

// Int returns a pointer to v, for optional fields.
func Int(v int64) *int64 { return &v }

// New returns a card for a run of the named pipeline starting now, with the
// schema, a fresh run id and the host's facts filled in.
func New(pipeline string) *Card {
	return &Card{
		Schema:    Schema,
		RunID:     NewRunID(),
		StartedAt: time.Now().UTC(),
		Pipeline:  pipeline,
		Host:      HostFacts(),
	}
}

// NewRunID returns 16 random hex digits.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// AddModel records a model the run used.
func (c *Card) AddModel(name, variant, sha256 string) {
	c.Models = append(c.Models, Model{Name: name, Variant: variant, SHA256: sha256})
}

// SetLabel sets a free-form label.
func (c *Card) SetLabel(key, value string) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[key] = value
}

// SetAudioIn records the seconds of audio consumed and updates the RTF.
func (c *Card) SetAudioIn(seconds float64) {
	c.AudioInSeconds = Float(round(seconds, 6))
	c.updateRTF()
}

// SetAudioOut records the seconds of audio produced and updates the RTF.
func (c *Card) SetAudioOut(seconds float64) {
	c.AudioOutSeconds = Float(round(seconds, 6))
	c.updateRTF()
}

// SetWall records the run's wall time and updates the RTF.
func (c *Card) SetWall(d time.Duration) {
	c.WallSeconds = round(d.Seconds(), 6)
	c.updateRTF()
}

// updateRTF sets RTF = wall / audio seconds, taking the audio consumed when
// known (recognition) and else the audio produced (synthesis). It leaves RTF
// alone when either side is unknown or zero.
func (c *Card) updateRTF() {
	audio := 0.0
	switch {
	case c.AudioInSeconds != nil && *c.AudioInSeconds > 0:
		audio = *c.AudioInSeconds
	case c.AudioOutSeconds != nil && *c.AudioOutSeconds > 0:
		audio = *c.AudioOutSeconds
	}
	if audio > 0 && c.WallSeconds > 0 {
		c.RTF = Float(sig(c.WallSeconds/audio, 6))
	}
}

// ms converts a duration to milliseconds with microsecond resolution.
func ms(d time.Duration) *float64 { return Float(round(float64(d)/1e6, 3)) }

// round rounds v to the given number of decimals, through the decimal text
// so that the JSON shows 17.493, not 17.493000000000002.
func round(v float64, decimals int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// sig rounds v to n significant digits.
func sig(v float64, n int) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if err != nil {
		return v
	}
	return r
}
