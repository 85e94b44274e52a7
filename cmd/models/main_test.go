package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// ready fetches Silero VAD (small) into the default cache, or skips loudly
// when npm is missing and the cache lacks it.
func ready(t *testing.T) {
	t.Helper()
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Ready(weights.SileroVADv6) && !fetch.HaveNpm() {
		t.Skipf("SKIPPING: npm is not installed and %s lacks %s; run `make models`", c.Root, weights.SileroVADv6)
	}
	c.Progress = nil
	if err := c.Ensure(context.Background(), weights.SileroVADv6); err != nil {
		t.Fatal(err)
	}
}

func TestCommands(t *testing.T) {
	ready(t)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"list", "silero-vad-v6"}, []string{"# silero-vad-v6: 30 tensors", "stft.forward_basis_buffer", "F32", "[258,1,256]", "model_8k.decoder.rnn.weight_ih"}},
		{[]string{"graph", "silero-vad-v6"}, []string{"input  sr int64[]", "If_0 If(Equal_0_C)", "then_branch:", "{=encoder.0.reparam_conv.weight}", "value=int64[][16000]"}},
		{[]string{"const", "silero-vad-v6", "Constant_0_output"}, []string{"int64[]", "16000"}},
		{[]string{"info", "silero-vad-v6"}, []string{"silero-vad-v6 (ready)", "@ricky0123/vad-web@0.0.31", "converted: 30 tensors"}},
		{[]string{"path", "silero-vad-v6", "silero_vad.onnx"}, []string{"silero-vad-v6/src/silero_vad.onnx"}},
		{[]string{"help"}, []string{"models fetch", "whisper-tiny"}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := run(context.Background(), tt.args, &out); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q", tt.args, w)
			}
		}
	}
	for _, args := range [][]string{{}, {"frobnicate"}, {"list"}, {"list", "whisper-huge"}, {"const", "silero-vad-v6", "nope"}, {"graph", "kokoro-voices"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

// TestVerify damages the converted weights of a copy of the Silero VAD entry
// in place (same size, mtime set back) and checks that `models verify`
// names the file, re-converts it, and finds everything intact afterwards.
func TestVerify(t *testing.T) {
	ready(t)
	c, err := weights.NewCache()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	src := filepath.Join(c.Root, weights.SileroVADv6)
	if err := os.CopyFS(filepath.Join(root, weights.SileroVADv6), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FORGE_MODELS", root)
	t.Setenv("PATH", t.TempDir()) // the repair must not need npm
	p := filepath.Join(root, weights.SileroVADv6, weights.SileroVADv6+".safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	for i := len(b) / 2; i < len(b)/2+4096; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, st.ModTime(), st.ModTime())
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"verify", weights.SileroVADv6}, []string{p, "corrupt", "replaced 1 corrupt file"}},
		{[]string{"verify", weights.SileroVADv6}, []string{"every file matches its sha256"}},
		{[]string{"verify", weights.WhisperTiny}, []string{"not in the cache"}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := run(context.Background(), tt.args, &out); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, out.String())
			}
		}
	}
	if err := run(context.Background(), []string{"verify", "whisper-huge"}, &bytes.Buffer{}); err == nil {
		t.Error("verify of an unknown model succeeded")
	}
}
