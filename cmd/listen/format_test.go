package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/models/whisper/wer"
	"github.com/tensorforge/forge/scorecards"
)

// audioTestdata returns a compressed test clip (testenv.AudioFixture:
// jfk.wav, whole or its first seconds, encoded by flac, lame, oggenc or
// opusenc).
func audioTestdata(t *testing.T, name string) string {
	t.Helper()
	return testenv.AudioFixture(t, name)
}

// TestBinaryFormats runs the built listen as a user would: every --format
// on jfk.wav, -o choosing the format by extension, several inputs of
// several audio formats into a folder, the formats it cannot read named,
// --progress and --threads.
func TestBinaryFormats(t *testing.T) {
	requireWhisper(t)
	bin := testenv.Build(t, "cmd/listen")
	jfk := dataFile(t, "jfk.wav")
	for _, c := range []struct {
		format string
		check  func(out string) bool
	}{
		{"text", func(out string) bool {
			return strings.Count(out, "\n") == 1 && strings.HasPrefix(out, "And so my fellow")
		}},
		{"json", func(out string) bool {
			var seg struct{ Text, Language string }
			return json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &seg) == nil && seg.Language == "en" && strings.HasPrefix(seg.Text, "And")
		}},
		{"srt", func(out string) bool {
			return strings.HasPrefix(out, "1\n00:00:0") && strings.Contains(out, " --> 00:00:")
		}},
		{"vtt", func(out string) bool { return strings.HasPrefix(out, "WEBVTT\n\n00:00:0") }},
		{"tsv", func(out string) bool {
			return strings.HasPrefix(out, "start\tend\ttext\n") && strings.Contains(out, "\tAnd so")
		}},
		{"verbose", func(out string) bool {
			return strings.HasPrefix(out, "[00:00:0") && strings.Contains(out, "] And so my")
		}},
		{"verbose_json", func(out string) bool {
			var v struct {
				Task, Language string
				Duration       float64
				Segments       []struct{ Text string }
			}
			return json.Unmarshal([]byte(out), &v) == nil && v.Task == "transcribe" && v.Language == "english" && v.Duration == 11 && len(v.Segments) > 0
		}},
	} {
		t.Run(c.format, func(t *testing.T) {
			code, out, errs := runBinary(t, bin, nil, "--language", "en", "--format", c.format, jfk)
			if code != exitOK || !c.check(out) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
			if r := wer.Compare(jfkRef, textOf(t, c.format, out)); c.format != "verbose_json" && r.Errors() != 0 {
				t.Errorf("words: %+v", r)
			}
		})
	}
	t.Run("-o picks the format by extension", func(t *testing.T) {
		dir := t.TempDir()
		for ext, head := range map[string]string{".srt": "1\n00:00:0", ".vtt": "WEBVTT", ".tsv": "start\tend\ttext", ".txt": "And so", ".json": `{"start":`} {
			path := filepath.Join(dir, "jfk"+ext)
			code, out, errs := runBinary(t, bin, nil, "--language", "en", "-o", path, jfk)
			got, err := os.ReadFile(path)
			if code != exitOK || out != "" || err != nil || !strings.HasPrefix(string(got), head) {
				t.Errorf("-o %s: exit %d, stdout %q, stderr %q, file %q (%v)", path, code, out, errs, got, err)
			}
		}
		if code, _, errs := runBinary(t, bin, nil, "-o", filepath.Join(dir, "x.doc"), jfk); code != exitUsage || !strings.Contains(errs, `extension ".doc"`) {
			t.Errorf("-o x.doc: exit %d, stderr %q", code, errs)
		}
	})
	t.Run("several inputs of several formats into a folder", func(t *testing.T) {
		dir := t.TempDir() + "/out/"
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		inputs := []string{jfk, audioTestdata(t, "jfk-1s.flac"), audioTestdata(t, "jfk-2s-48k.mp3"), audioTestdata(t, "jfk-11s.ogg")}
		code, out, errs := runBinary(t, bin, nil, append([]string{"--language", "en", "--format", "vtt", "-o", dir}, inputs...)...)
		if code != exitOK || out != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
		}
		for _, name := range []string{"jfk.vtt", "jfk-1s.vtt", "jfk-2s-48k.vtt", "jfk-11s.vtt"} {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !strings.HasPrefix(string(got), "WEBVTT\n\n00:00:0") || !strings.Contains(string(got), "And so") {
				t.Errorf("%s: %q (%v)", name, got, err)
			}
		}
		code, out, errs = runBinary(t, bin, nil, append([]string{"--language", "en"}, inputs...)...)
		// Ogg/Vorbis of all of jfk.wav (oggenc -q 4, 22 dB SNR) reads as the
		// WAV does, word for word and mark for mark.
		if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitOK || len(lines) != 4 || !strings.HasPrefix(lines[2], "And so my fellow") || lines[3] != lines[0] {
			t.Errorf("to stdout: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		if code, _, errs := runBinary(t, bin, nil, append([]string{"-o", filepath.Join(dir, "all.txt")}, inputs...)...); code != exitUsage || !strings.Contains(errs, "need a folder") {
			t.Errorf("-o FILE with 4 inputs: exit %d, stderr %q", code, errs)
		}
	})
	t.Run("a format it cannot read is named", func(t *testing.T) {
		opus, err := os.ReadFile(audioTestdata(t, "jfk-1s.opus"))
		if err != nil {
			t.Fatal(err)
		}
		code, out, errs := runBinary(t, bin, nil, writeTemp(t, "song.mp3", opus))
		if code != exitError || out != "" || !strings.Contains(errs, "Ogg/Opus is not supported: no pure-Go Opus decoder is built in") || strings.Count(errs, "\n") != 1 {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})
	t.Run("words", func(t *testing.T) {
		code, out, errs := runBinary(t, bin, nil, "--words", "--language", "en", "--format", "json", jfk)
		var n int
		last := -1.0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var seg struct {
				Words []struct {
					Word        string
					Start, End  float64
					Probability float64
				}
			}
			if err := json.Unmarshal([]byte(line), &seg); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			for _, w := range seg.Words {
				if w.Word == "" || w.Word != strings.TrimSpace(w.Word) || w.Start < last || w.End < w.Start || w.Probability <= 0 {
					t.Errorf("word %+v after %v", w, last)
				}
				last = w.End
				n++
			}
		}
		if code != exitOK || n != 22 {
			t.Errorf("exit %d, %d words, stdout %q, stderr %q", code, n, out, errs)
		}
	})
	t.Run("progress", func(t *testing.T) {
		code, _, errs := runBinary(t, bin, nil, "--progress", "--language", "en", jfk)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != exitOK || len(lines) != 10 || !strings.Contains(lines[9], "100% (11.0 of 11.0 s)") || strings.Contains(errs, "\r") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
	t.Run("threads", func(t *testing.T) {
		card := filepath.Join(t.TempDir(), "card.json")
		code, _, errs := runBinary(t, bin, nil, "--threads", "1", "--scorecard", card, goldenWAV(t, "cards_001"))
		cards, err := scorecards.ReadFile(card)
		if code != exitOK || err != nil || !strings.Contains(cards[0].Device, ", 1 threads") {
			t.Fatalf("exit %d, stderr %q, card %v", code, errs, err)
		}
	})
}

// textOf returns the words of a transcript in format, without times.
func textOf(t *testing.T, format, out string) string {
	t.Helper()
	var words []string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case format == "json":
			var seg struct{ Text string }
			if line != "" && json.Unmarshal([]byte(line), &seg) == nil {
				words = append(words, seg.Text)
			}
		case strings.Contains(line, "-->") && format != "verbose", line == "WEBVTT", line == "start\tend\ttext":
		case format == "srt" && strings.Trim(line, "0123456789") == "":
		case format == "tsv":
			if f := strings.SplitN(line, "\t", 3); len(f) == 3 {
				words = append(words, f[2])
			}
		case format == "verbose":
			if _, after, ok := strings.Cut(line, "] "); ok {
				words = append(words, after)
			}
		default:
			words = append(words, line)
		}
	}
	return strings.Join(words, " ")
}

// TestHelp: -h exits 0 and shows the defaults transcription uses (not
// --vad-only's); an unknown flag is reported once, with the usage.
func TestHelp(t *testing.T) {
	code, out, errs := runListen(t, "-h")
	for _, want := range []string{"-vad-pad duration\n", "(default 400ms)", "(default 500ms)", "(default 29s)", "WAV, FLAC, MP3 or Ogg/Vorbis, by content", "-format format", "-threads int", "--vad-only keeps Silero's own\n(pad 30ms, min silence 100ms"} {
		if !strings.Contains(errs, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if code != exitOK || out != "" {
		t.Errorf("-h: exit %d, stdout %q", code, out)
	}
	code, _, errs = runListen(t, "--vad-onyl", "x.wav")
	if code != exitUsage || strings.Count(errs, "flag provided but not defined") != 1 || strings.Count(errs, "usage:") != 1 {
		t.Errorf("unknown flag: exit %d, stderr %q", code, errs)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--format", "docx", "x.wav"}, `unknown transcript format "docx"`},
		{[]string{"--json", "--format", "srt", "x.wav"}, "disagree"},
		{[]string{"--threads", "-1", "x.wav"}, "--threads -1"},
		{[]string{"--vad-only", "-o", "x.txt", "x.wav"}, "--vad-only prints to stdout"},
		{[]string{"--words", "-o", "x.srt", "x.wav"}, "the srt format has no word times"},
	} {
		if code, _, errs := runListen(t, c.args...); code != exitUsage || !strings.Contains(errs, c.msg) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errs)
		}
	}
}
