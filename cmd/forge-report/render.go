package main

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/tensorforge/forge/scorecards"
)

const none = "—"

// cell escapes text for a markdown table cell.
func cell(s string) string {
	if s == "" {
		return none
	}
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func num(v *float64, prec int) string {
	if v == nil {
		return none
	}
	return strconv.FormatFloat(*v, 'f', prec, 64)
}

func count(v *int64) string {
	if v == nil {
		return none
	}
	return strconv.FormatInt(*v, 10)
}

func mib(v *int64) string {
	if v == nil {
		return none
	}
	return strconv.FormatFloat(float64(*v)/(1<<20), 'f', 1, 64)
}

func audio(c *scorecards.Card) string {
	var parts []string
	if c.AudioInSeconds != nil {
		parts = append(parts, num(c.AudioInSeconds, 2)+" in")
	}
	if c.AudioOutSeconds != nil {
		parts = append(parts, num(c.AudioOutSeconds, 2)+" out")
	}
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, ", ")
}

func host(h scorecards.Host) string {
	cpu := h.CPU
	if cpu == "" {
		cpu = h.OS + "/" + h.Arch
	}
	return fmt.Sprintf("%s ×%d", cpu, h.Cores)
}

func models(c *scorecards.Card) string {
	var parts []string
	for _, m := range c.Models {
		s := m.Name
		if m.Variant != "" {
			s += " " + m.Variant
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// renderMarkdown is the dated report: one row per run, then each run's
// stages, then the chart.
func renderMarkdown(cards []scorecards.Card, date, svgName string, sources []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Forge scorecards — %s\n\n", date)
	fmt.Fprintf(&b, "%d run(s) from %s. Wall-clock numbers on the host shown; lower is better. RTF is wall time over audio time; TTFA is time to first output. %s marks what a run did not measure.\n\n",
		len(cards), cell("`"+strings.Join(sources, "`, `")+"`"), none)
	b.WriteString("## Runs\n\n")
	b.WriteString("| pipeline | started (UTC) | models | backend | device | host | audio s | wall s | RTF | TTFA ms | peak MiB | dispatches |\n")
	b.WriteString("|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|\n")
	for i := range cards {
		c := &cards[i]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.3f | %s | %s | %s | %s |\n",
			cell(c.Pipeline), c.StartedAt.UTC().Format("2006-01-02 15:04:05"), cell(models(c)), cell(c.Backend), cell(c.Device),
			cell(host(c.Host)), audio(c), c.WallSeconds, num(c.RTF, 3), num(c.TTFAMs, 1), mib(c.PeakBytes), count(c.Dispatches))
	}
	b.WriteString("\n## Stages\n")
	for i := range cards {
		c := &cards[i]
		if len(c.Stages) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s — %s (run %s)\n\n", cell(c.Pipeline), c.StartedAt.UTC().Format("2006-01-02 15:04:05"), cell(c.RunID))
		b.WriteString("| stage | frames in | frames out | busy ms | wait in ms | wait out ms | p50 ms | p95 ms | max ms | queue max |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range c.Stages {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				cell(s.Name), count(s.FramesIn), count(s.FramesOut), num(s.BusyMs, 1), num(s.WaitInMs, 1), num(s.WaitOutMs, 1),
				num(s.LatencyP50Ms, 2), num(s.LatencyP95Ms, 2), num(s.LatencyMaxMs, 2), count(s.QueueMax))
		}
	}
	fmt.Fprintf(&b, "\n## Per-stage busy time\n\n![Per-stage busy time](%s)\n", svgName)
	return b.String()
}

// renderSVG draws one horizontal bar per stage of each run, its length the
// stage's busy time on a scale shared by all runs.
func renderSVG(cards []scorecards.Card) string {
	const (
		width  = 900
		labelW = 260
		valueW = 90
		barH   = 16
		gap    = 4
		headH  = 24
	)
	maxBusy := 0.0
	rows := 0
	for _, c := range cards {
		for _, s := range c.Stages {
			if s.BusyMs != nil {
				maxBusy = math.Max(maxBusy, *s.BusyMs)
			}
		}
		rows += len(c.Stages)
	}
	height := 40 + len(cards)*headH + rows*(barH+gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="8" y="20" font-size="14" font-weight="bold">Per-stage busy time (ms)</text>`+"\n")
	palette := []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"}
	y := 40
	for i, c := range cards {
		title := fmt.Sprintf("%s — %s (%s)", c.Pipeline, c.StartedAt.UTC().Format("2006-01-02 15:04"), short(c.RunID))
		fmt.Fprintf(&b, `<text x="8" y="%d" font-weight="bold">%s</text>`+"\n", y+14, html.EscapeString(title))
		y += headH
		for _, s := range c.Stages {
			busy := 0.0
			if s.BusyMs != nil {
				busy = *s.BusyMs
			}
			w := 0.0
			if maxBusy > 0 {
				w = busy / maxBusy * float64(width-labelW-valueW)
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelW-8, y+barH-4, html.EscapeString(s.Name))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelW, y, w, barH, palette[i%len(palette)])
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(labelW)+w+6, y+barH-4, num(s.BusyMs, 1))
			y += barH + gap
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// renderDiff is the diff's text report: every delta, regressions marked.
func renderDiff(cmp scorecards.Comparison, worse []scorecards.Delta, maxRatio float64) string {
	bad := map[string]bool{}
	for _, d := range worse {
		bad[d.Key+" "+d.Metric] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %-36s %12s %12s %8s\n", "run", "metric", "base", "head", "ratio")
	for _, d := range cmp.Deltas {
		mark := ""
		if bad[d.Key+" "+d.Metric] {
			mark = fmt.Sprintf("  WORSE (> ×%.2f)", maxRatio)
		}
		fmt.Fprintf(&b, "%-28s %-36s %12.4g %12.4g %8.3f%s\n", d.Key, d.Metric, d.Base, d.Head, d.Ratio, mark)
	}
	for _, k := range cmp.OnlyBase {
		fmt.Fprintf(&b, "only in base: %s\n", k)
	}
	for _, k := range cmp.OnlyHead {
		fmt.Fprintf(&b, "only in head: %s\n", k)
	}
	fmt.Fprintf(&b, "%d metric(s) compared, %d worse than ×%.2f\n", len(cmp.Deltas), len(worse), maxRatio)
	return b.String()
}
