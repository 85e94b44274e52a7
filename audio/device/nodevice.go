//go:build !portaudio

package device

func devices() ([]Info, error) { return nil, ErrNoAudio }

func openDevice(Config, bool) (blockDevice, Info, int, error) {
	return nil, Info{}, 0, ErrNoAudio
}
