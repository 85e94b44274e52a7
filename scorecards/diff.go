package scorecards

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Delta compares one metric of one kind of run between a base set of cards
// and a head set. Every metric compared is lower-is-better (time, bytes,
// dispatches, compilations, transfers), so Ratio > 1 means head is worse.
type Delta struct {
	// Key names the kind of run: the pipeline, then backend and device when
	// set ("listen/cpu/avx512").
	Key string
	// Metric is the scorecard key ("rtf", "ttfa_ms") or, per stage,
	// "stages[NAME].busy_ms".
	Metric string
	// Base and Head are the medians over the runs of each side.
	Base, Head float64
	// Ratio is Head/Base: 1 when both are 0, +Inf when only Base is 0.
	Ratio float64
	// BaseRuns and HeadRuns count the cards with this metric on each side.
	BaseRuns, HeadRuns int
}

// String formats the delta for a log or a CI message.
func (d Delta) String() string {
	return fmt.Sprintf("%s %s: %.4g → %.4g (×%.3f, %d vs %d runs)", d.Key, d.Metric, d.Base, d.Head, d.Ratio, d.BaseRuns, d.HeadRuns)
}

// Comparison is the result of Diff.
type Comparison struct {
	Deltas []Delta
	// OnlyBase and OnlyHead list run kinds present on one side only.
	OnlyBase, OnlyHead []string
}

// Worse returns the deltas whose ratio exceeds maxRatio (1.10 allows 10%
// regression), restricted to the given metrics when any are named (a name
// matches a metric exactly or, for "busy_ms" and the like, the per-stage
// metric of that name).
func (c Comparison) Worse(maxRatio float64, metrics ...string) []Delta {
	var out []Delta
	for _, d := range c.Deltas {
		if d.Ratio > maxRatio && matches(d.Metric, metrics) {
			out = append(out, d)
		}
	}
	return out
}

func matches(metric string, names []string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if metric == n || strings.HasPrefix(metric, "stages[") && strings.HasSuffix(metric, "]."+n) {
			return true
		}
	}
	return false
}

// Key returns the kind-of-run key Diff groups cards by.
func Key(c *Card) string {
	k := c.Pipeline
	if c.Backend != "" {
		k += "/" + c.Backend
	}
	if c.Device != "" {
		k += "/" + c.Device
	}
	return k
}

// Diff compares head against base. Cards are grouped by Key; within a group
// each metric is the median over the cards that report it, so a set of
// repeated runs compares robustly. Metrics reported on one side only are
// skipped. Deltas are sorted by key, then metric.
func Diff(base, head []Card) Comparison {
	b, h := group(base), group(head)
	var cmp Comparison
	for k, bm := range b {
		hm, ok := h[k]
		if !ok {
			cmp.OnlyBase = append(cmp.OnlyBase, k)
			continue
		}
		for name, bv := range bm {
			hv, ok := hm[name]
			if !ok {
				continue
			}
			bmed, hmed := median(bv), median(hv)
			cmp.Deltas = append(cmp.Deltas, Delta{Key: k, Metric: name, Base: bmed, Head: hmed, Ratio: ratio(bmed, hmed), BaseRuns: len(bv), HeadRuns: len(hv)})
		}
	}
	for k := range h {
		if _, ok := b[k]; !ok {
			cmp.OnlyHead = append(cmp.OnlyHead, k)
		}
	}
	sort.Strings(cmp.OnlyBase)
	sort.Strings(cmp.OnlyHead)
	sort.Slice(cmp.Deltas, func(i, j int) bool {
		if cmp.Deltas[i].Key != cmp.Deltas[j].Key {
			return cmp.Deltas[i].Key < cmp.Deltas[j].Key
		}
		return cmp.Deltas[i].Metric < cmp.Deltas[j].Metric
	})
	return cmp
}

func ratio(base, head float64) float64 {
	switch {
	case base == head:
		return 1
	case base == 0:
		return math.Inf(1)
	}
	return head / base
}

// group collects, per key, the values of every comparable metric.
func group(cards []Card) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	for i := range cards {
		c := &cards[i]
		k := Key(c)
		m := out[k]
		if m == nil {
			m = map[string][]float64{}
			out[k] = m
		}
		add := func(name string, v *float64) {
			if v != nil {
				m[name] = append(m[name], *v)
			}
		}
		addInt := func(name string, v *int64) {
			if v != nil {
				m[name] = append(m[name], float64(*v))
			}
		}
		add("wall_seconds", &c.WallSeconds)
		add("rtf", c.RTF)
		add("ttfa_ms", c.TTFAMs)
		addInt("dispatches", c.Dispatches)
		addInt("peak_bytes", c.PeakBytes)
		addInt("device_peak_bytes", c.DevicePeakBytes)
		addInt("programs_compiled", c.ProgramsCompiled)
		addInt("graph_builds", c.GraphBuilds)
		addInt("transfers", c.Transfers)
		addInt("transfer_bytes", c.TransferBytes)
		for _, s := range c.Stages {
			p := "stages[" + s.Name + "]."
			add(p+"busy_ms", s.BusyMs)
			add(p+"latency_p50_ms", s.LatencyP50Ms)
			add(p+"latency_p95_ms", s.LatencyP95Ms)
			add(p+"latency_max_ms", s.LatencyMaxMs)
		}
	}
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
