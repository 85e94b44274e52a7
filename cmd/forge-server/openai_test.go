package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tensorforge/forge/internal/testenv"
)

// openAIScript drives the official openai npm client against the server:
// jfk.wav in every response format, then speech that it sends back to be
// transcribed, and the model list. It prints one JSON object.
const openAIScript = `
import OpenAI, { toFile } from 'openai';
import fs from 'node:fs';
const client = new OpenAI({ baseURL: process.env.FORGE_URL + '/v1', apiKey: 'sk-forge-test', maxRetries: 0, timeout: 300000 });
const out = {};
for (const fmt of ['json', 'text', 'srt', 'vtt', 'verbose_json']) {
  out[fmt] = await client.audio.transcriptions.create({ file: fs.createReadStream(process.env.JFK), model: 'whisper-1', response_format: fmt });
}
const speech = await client.audio.speech.create({ model: 'tts-1', voice: 'af_heart', input: process.env.TEXT, response_format: 'wav' });
const wav = Buffer.from(await speech.arrayBuffer());
out.speechBytes = wav.length;
out.roundtrip = (await client.audio.transcriptions.create({ file: await toFile(wav, 'speech.wav'), model: 'whisper-tiny' })).text;
out.models = (await client.models.list()).data.map(m => m.id);
try {
  await client.audio.speech.create({ model: 'tts-1', voice: 'nobody', input: 'hello' });
  out.badVoice = 'no error';
} catch (e) {
  out.badVoice = { status: e.status, code: e.code };
}
console.log(JSON.stringify(out));
`

// TestOpenAIClient runs the official openai npm package, installed into a
// scratch folder, against forge-server with an API key.
func TestOpenAIClient(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("SKIPPED — NO NPM: the official openai client test needs node and npm (scripts/deps.sh installs them on Debian)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED — NO NODE: the official openai client test needs node and npm (scripts/deps.sh installs them on Debian)")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, "openai@^6")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install openai: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "client.mjs")
	if err := os.WriteFile(script, []byte(openAIScript), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "--api-key", "sk-forge-test")
	const text = "The quick brown fox jumps over the lazy dog."
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FORGE_URL="+p.URL, "JFK="+testenv.Shared(t, "data", "jfk.wav"), "TEXT="+text)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		JSON        struct{ Text string } `json:"json"`
		Text        string                `json:"text"`
		SRT         string                `json:"srt"`
		VTT         string                `json:"vtt"`
		VerboseJSON struct {
			Task, Language, Text string
			Duration             float64
			Segments             []struct {
				ID         int
				Start, End float64
				Text       string
				Tokens     []int
			}
		} `json:"verbose_json"`
		SpeechBytes int      `json:"speechBytes"`
		Roundtrip   string   `json:"roundtrip"`
		Models      []string `json:"models"`
		BadVoice    struct {
			Status int
			Code   string
		} `json:"badVoice"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	const jfk = "ask not what your country can do for you"
	for name, s := range map[string]string{"json": got.JSON.Text, "text": got.Text, "srt": got.SRT, "vtt": got.VTT, "verbose_json": got.VerboseJSON.Text} {
		if !strings.Contains(words(s), jfk) {
			t.Errorf("%s: %q lacks %q", name, s, jfk)
		}
	}
	if !strings.HasPrefix(got.SRT, "1\n00:00:00,000 --> ") || !strings.HasPrefix(got.VTT, "WEBVTT\n\n00:00:00.000 --> ") {
		t.Errorf("srt %q / vtt %q do not start as SubRip / WebVTT", got.SRT, got.VTT)
	}
	v := got.VerboseJSON
	if v.Task != "transcribe" || v.Language != "english" || v.Duration < 10.9 || v.Duration > 11.1 || len(v.Segments) == 0 || len(v.Segments[0].Tokens) == 0 {
		t.Errorf("verbose_json %+v", v)
	}
	if got.SpeechBytes < 44+2*24000 || words(got.Roundtrip) != words(text) {
		t.Errorf("speech of %d bytes heard back as %q, want %q", got.SpeechBytes, got.Roundtrip, text)
	}
	for _, id := range []string{"whisper-tiny", "whisper-1", "kokoro", "tts-1"} {
		if !strings.Contains(" "+strings.Join(got.Models, " ")+" ", " "+id+" ") {
			t.Errorf("models %q lack %s", got.Models, id)
		}
	}
	if got.BadVoice.Status != 400 || got.BadVoice.Code != "invalid_voice" {
		t.Errorf("unknown voice: %+v, want 400 invalid_voice", got.BadVoice)
	}
}

// words lower-cases s and keeps its letters and digits, one space
// between words.
func words(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return ' '
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
