package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
)

// TestSayLongWordsCLI runs the built say on issue 15's texts, each of
// which once ended the run with "word too long" and kept only the audio
// before it: now the whole text is said, the run exits 0, and a
// character that cannot fit a chunk is left out with a warning on stderr.
func TestSayLongWordsCLI(t *testing.T) {
	needSynthesis(t, "builds say and synthesises half a minute of speech")
	bin := testenv.Build(t, "cmd/say")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		// minSeconds is well below the speech the whole text takes and
		// well above what the words before the long one take: about 0.3 s
		// per spelled character, measured.
		minSeconds float64
		warning    string // in stderr, or "" for a clean stderr
	}{
		{"hash and 30 digits", []string{"Commit 3f786850e387550fdab836ed7e6dc881de23001b was merged. The count is 123456789012345678901234567890."}, 15, ""},
		// ㊗ reads as "Japanese congratulations button": 36 tokens, more
		// than the chunks of 16 allow.
		{"character left out", []string{"--max-tokens", "16", "Well done ㊗ on 3f786850e387550f."}, 4, "㊗"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".wav")
			var stderr bytes.Buffer
			cmd := exec.Command(bin, append([]string{"-o", out}, c.args...)...)
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("say %q: %v (want exit 0)\n%s", c.args, err, stderr.String())
			}
			clip, err := audio.ReadWAVFile(out)
			if err != nil {
				t.Fatal(err)
			}
			seconds := float64(len(clip.Samples)) / float64(clip.SampleRate)
			var peak float32
			for _, s := range clip.Samples {
				peak = max(peak, s, -s)
			}
			t.Logf("%.1f s of speech, peak %.2f; stderr %q", seconds, peak, stderr.String())
			if seconds < c.minSeconds || peak < 0.05 {
				t.Errorf("%.1f s, peak %.2f: want at least %.0f s of speech", seconds, peak, c.minSeconds)
			}
			switch {
			case c.warning == "" && stderr.Len() > 0:
				t.Errorf("stderr %q, want it empty", stderr.String())
			case c.warning != "" && !(strings.Contains(stderr.String(), "WARN") && strings.Contains(stderr.String(), c.warning)):
				t.Errorf("stderr %q, want a warning naming %q", stderr.String(), c.warning)
			}
		})
	}
}
