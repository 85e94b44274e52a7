//go:build portaudio

package device

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPortAudioDevices runs against the real host: it lists devices, and
// records from / plays to the default devices when there are any (ALSA's
// "null" or "default" PCM count). Without any it skips, loudly.
func TestPortAudioDevices(t *testing.T) {
	infos, err := Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	var hasIn, hasOut bool
	for _, d := range infos {
		t.Logf("device %d %q (%s): in %d, out %d, %g Hz, default in %v out %v",
			d.Index, d.Name, d.HostAPI, d.InputChannels, d.OutputChannels, d.DefaultRate, d.DefaultInput, d.DefaultOutput)
		hasIn = hasIn || (d.InputChannels > 0 && d.DefaultInput)
		hasOut = hasOut || (d.OutputChannels > 0 && d.DefaultOutput)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if hasIn {
		c, err := OpenCapture(Config{SampleRate: 16000, FrameSize: 512})
		if err != nil {
			t.Fatalf("OpenCapture: %v", err)
		}
		buf := make([]float32, 1600)
		n, err := c.Read(ctx, buf)
		if err != nil || n != len(buf) {
			t.Errorf("Read = %d, %v", n, err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close capture: %v", err)
		}
		t.Logf("captured %d samples at 16 kHz from %q (device rate %g Hz)", n, c.Info().Name, c.Info().DefaultRate)
	} else {
		t.Log("SKIPPED capture: PortAudio reports no default capture device on this host")
	}
	if hasOut {
		p, err := OpenPlayback(Config{SampleRate: 24000})
		if err != nil {
			t.Fatalf("OpenPlayback: %v", err)
		}
		if err := p.Write(ctx, make([]float32, 2400)); err != nil {
			t.Errorf("Write: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("Close playback: %v", err)
		}
	} else {
		t.Log("SKIPPED playback: PortAudio reports no default playback device on this host")
	}
	if !hasIn && !hasOut {
		t.Skipf("SKIPPED: no audio devices on this host (PortAudio listed %d); capture/playback were not exercised", len(infos))
	}
	if _, err := OpenCapture(Config{Device: "no such device, surely"}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("unknown device: err = %v, want ErrNoDevice", err)
	}
}
