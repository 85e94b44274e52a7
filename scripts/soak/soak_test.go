package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
)

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int64
		ok     bool
	}{
		{"linux", "Name:\tsay\nVmPeak:\t 4190408 kB\nVmRSS:\t 1411900 kB\nRssAnon:\t 1 kB\n", 1411900 * 1024, true},
		{"missing", "Name:\tsay\nVmPeak:\t 4190408 kB\n", 0, false},
		{"other unit", "VmRSS:\t 12 MB\n", 0, false},
		{"not a number", "VmRSS:\t x kB\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseVmRSS(tt.status)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseVmRSS = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	var s []rssSample
	for i := range 20 {
		s = append(s, rssSample{time.Duration(i) * time.Second, int64(100 + i)})
	}
	tests := []struct {
		name    string
		samples []rssSample
		want    summary
		growth  float64
	}{
		{"none", nil, summary{}, 0},
		{"rising", s, summary{at10: 102, at50: 110, end: 119, max: 119}, 100 * 17.0 / 102},
		{"peak inside", []rssSample{{0, 5}, {1, 50}, {2, 10}}, summary{at10: 5, at50: 50, end: 10, max: 50}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(tt.samples)
			if got != tt.want || got.growth() != tt.growth {
				t.Errorf("summarize = %+v (growth %v), want %+v (%v)", got, got.growth(), tt.want, tt.growth)
			}
		})
	}
}

func TestSoakText(t *testing.T) {
	dir := t.TempDir()
	prose := filepath.Join(dir, "prose.txt")
	if err := os.WriteFile(prose, []byte("See https://example.org/x for section 2.1 -- the rules.\nOne more line."), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		c        config
		words    int
		excludes []string
	}{
		// Licence-style files are cleaned of addresses, numbers and rules.
		{"cleaned", config{words: 25, licences: []string{prose}}, 25, []string{"https", "2.1", "--"}},
		// A -text file is read as it is.
		{"as given", config{words: 9, text: prose}, 9, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := soakText(&tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(strings.Fields(text)); n != tt.words {
				t.Errorf("%d words, want %d", n, tt.words)
			}
			for _, x := range tt.excludes {
				if strings.Contains(text, x) {
					t.Errorf("text keeps %q: %q", x, text)
				}
			}
			for _, line := range strings.Split(text, "\n") {
				if len(line) > 100 {
					t.Errorf("line of %d characters", len(line))
				}
			}
		})
	}
	if _, err := soakText(&config{words: 5, licences: []string{filepath.Join(dir, "absent")}}); err == nil {
		t.Error("missing prose gave no error")
	}
}

func TestSoakAudio(t *testing.T) {
	shared := testenv.SharedDir(t)
	if _, err := os.Stat(filepath.Join(shared, "data", "jfk.wav")); err != nil {
		t.Skipf("SKIP: needs ../shared/data: %v", err)
	}
	path := filepath.Join(t.TempDir(), "soak.wav")
	if err := writeSoakAudio(path, shared, 100); err != nil {
		t.Fatal(err)
	}
	c, err := audio.ReadWAVFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Written until 100 s are reached: at most one clip (60 s) and a gap
	// beyond.
	if d := c.Duration(); c.SampleRate != rate || d < 100*time.Second || d > 162*time.Second {
		t.Errorf("%v at %d Hz, want 100–162 s at %d", d, c.SampleRate, rate)
	}
}
