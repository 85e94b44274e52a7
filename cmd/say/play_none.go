//go:build !portaudio

package main

import "errors"

// newPlayer reports that this build cannot play audio.
func newPlayer(rate int) (sinkFunc, func() error, error) {
	return nil, nil, errors.New("this build has no audio output: pass -o FILE.wav (or build with -tags portaudio to play to the speaker)")
}
