//go:build !portaudio

package device

import (
	"errors"
	"testing"
)

func TestWithoutPortAudio(t *testing.T) {
	const want = "built without audio devices; rebuild with -tags portaudio or write to a file"
	if _, err := Devices(); !errors.Is(err, ErrNoAudio) || err.Error() != want {
		t.Errorf("Devices: %v", err)
	}
	if _, err := OpenCapture(Config{SampleRate: 16000}); !errors.Is(err, ErrNoAudio) {
		t.Errorf("OpenCapture: %v", err)
	}
	if _, err := OpenPlayback(Config{}); !errors.Is(err, ErrNoAudio) {
		t.Errorf("OpenPlayback: %v", err)
	}
}
