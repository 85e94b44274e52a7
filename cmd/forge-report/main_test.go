package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/scorecards"
)

func card(pipe string, rtf float64, stages ...string) *scorecards.Card {
	c := &scorecards.Card{
		Schema:    scorecards.Schema,
		RunID:     "feedfacecafebeef",
		StartedAt: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		Pipeline:  pipe,
		Backend:   "cpu",
		Host:      scorecards.Host{OS: "linux", Arch: "amd64", CPU: "Xeon | test", Cores: 2, Go: "go1.26"},
	}
	c.SetWall(2 * time.Second)
	c.SetAudioIn(2 / rtf)
	c.AddModel("whisper", "tiny", "")
	for i, s := range stages {
		c.Stages = append(c.Stages, scorecards.Stage{Name: s, FramesIn: scorecards.Int(10), BusyMs: scorecards.Float(float64(10 * (i + 1)))})
	}
	return c
}

func write(t *testing.T, dir string, cards ...*scorecards.Card) {
	t.Helper()
	for i, c := range cards {
		c.RunID = strings.Repeat(string(rune('a'+i)), 16)
		if _, err := scorecards.Write(dir+string(os.PathSeparator), c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReport(t *testing.T) {
	in := t.TempDir()
	write(t, in, card("listen", 0.25, "vad", "encoder", "decoder"), card("say", 0.5, "kokoro<&>"))
	out := filepath.Join(t.TempDir(), "reports")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-out", out, "-date", "2025-03-05", in}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v (%s)", err, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "2025-03-05-scorecards.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Forge scorecards — 2025-03-05",
		"2 run(s)",
		"| listen | 2025-03-04 05:06:07 | whisper tiny | cpu | — | Xeon \\| test ×2 | 8.00 in | 2.000 | 0.250 | — | — | — |",
		"### say — 2025-03-04 05:06:07 (run bbbbbbbbbbbbbbbb)",
		"| encoder | 10 | — | 20.0 | — |",
		"![Per-stage busy time](2025-03-05-stages.svg)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	svg, err := os.ReadFile(filepath.Join(out, "2025-03-05-stages.svg"))
	if err != nil {
		t.Fatal(err)
	}
	rects := 0
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if rects != 1+4 { // background + one bar per stage
		t.Errorf("SVG has %d rects, want 5", rects)
	}
	if !strings.Contains(stdout.String(), "2025-03-05-scorecards.md") {
		t.Errorf("stdout %q does not name the report", stdout.String())
	}
}

func TestReportErrors(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "x.json"), []byte(`{"schema":"forge.scorecard/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no scorecard files"},
		{[]string{"-date", "5 March", bad}, "not YYYY-MM-DD"},
		{[]string{filepath.Join(bad, "absent")}, "no such file"},
		{[]string{bad}, "missing required fields: run_id"},
		{[]string{"diff", bad}, "needs BASE and HEAD"},
	}
	for _, tc := range tests {
		err := run(tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestDiffGate(t *testing.T) {
	base, head, same := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, base, card("listen", 0.20, "enc"), card("listen", 0.22, "enc"))
	write(t, head, card("listen", 0.30, "enc"))
	write(t, same, card("listen", 0.21, "enc"))
	var out bytes.Buffer
	err := run([]string{"diff", "-max-ratio", "1.10", base, head}, &out, io.Discard)
	if !errors.Is(err, errRegression) || !strings.Contains(out.String(), "rtf") || !strings.Contains(out.String(), "WORSE") {
		t.Fatalf("diff = %v:\n%s", err, out.String())
	}
	out.Reset()
	if err := run([]string{"diff", "-metrics", "busy_ms", base, head}, &out, io.Discard); err != nil {
		t.Fatalf("gating on busy_ms only (unchanged) = %v:\n%s", err, out.String())
	}
	if err := run([]string{"diff", base, same}, io.Discard, io.Discard); err != nil {
		t.Fatalf("diff of equal runs = %v", err)
	}
}
