//go:build portaudio && linux

package device

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestPortAudioNullDevice runs the real PortAudio/ALSA stack without sound
// hardware: it re-runs itself with ALSA_CONFIG_PATH pointing at
// testdata/alsa-null.conf, whose only device is ALSA's null plugin
// (capture delivers whatever is in its buffer, playback is discarded). ALSA reads its
// configuration once per process, hence the child process.
func TestPortAudioNullDevice(t *testing.T) {
	if os.Getenv("FORGE_ALSA_NULL") == "1" {
		nullDeviceChild(t)
		return
	}
	conf, err := filepath.Abs("testdata/alsa-null.conf")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortAudioNullDevice$", "-test.v")
	cmd.Env = append(os.Environ(), "FORGE_ALSA_NULL=1", "ALSA_CONFIG_PATH="+conf)
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	if err != nil {
		t.Fatalf("null-device child failed: %v", err)
	}
}

func nullDeviceChild(t *testing.T) {
	infos, err := Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	if len(infos) != 1 || infos[0].Name != "default" || !infos[0].DefaultInput || !infos[0].DefaultOutput {
		t.Fatalf("devices under the null config: %+v", infos)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, rate := range []int{16000, 0} {
		c, err := OpenCapture(Config{SampleRate: rate, FrameSize: 256})
		if err != nil {
			t.Fatalf("OpenCapture(%d Hz): %v", rate, err)
		}
		// ALSA's null capture leaves the buffer as it was, so only the
		// sample count is checked, not the values.
		buf := make([]float32, 1600)
		if n, err := c.Read(ctx, buf); err != nil || n != len(buf) {
			t.Fatalf("Read = %d, %v", n, err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("captured %d samples at %d Hz (asked %d)", len(buf), c.SampleRate(), rate)
	}
	p, err := OpenPlayback(Config{SampleRate: 24000})
	if err != nil {
		t.Fatalf("OpenPlayback: %v", err)
	}
	if err := p.Write(ctx, make([]float32, 4800)); err != nil {
		t.Errorf("Write: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close playback: %v", err)
	}
}
