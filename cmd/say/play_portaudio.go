//go:build portaudio

package main

import (
	"context"
	"fmt"

	"github.com/gordonklaus/portaudio"
)

// playBlock is the number of frames handed to the audio device per write.
const playBlock = 1024

// newPlayer opens the default output device at rate and returns a sink that
// plays each block as it arrives (blocking while the device drains) and a
// close function that waits for the last block and releases the device.
func newPlayer(rate int) (sinkFunc, func() error, error) {
	if err := portaudio.Initialize(); err != nil {
		return nil, nil, fmt.Errorf("audio output: %w", err)
	}
	buf := make([]float32, playBlock)
	stream, err := portaudio.OpenDefaultStream(0, 1, float64(rate), playBlock, &buf)
	if err != nil {
		portaudio.Terminate()
		return nil, nil, fmt.Errorf("audio output: %w", err)
	}
	if err := stream.Start(); err != nil {
		stream.Close()
		portaudio.Terminate()
		return nil, nil, fmt.Errorf("audio output: %w", err)
	}
	pending := 0 // samples of buf filled but not yet written
	play := func(ctx context.Context, pcm []float32) error {
		for len(pcm) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := copy(buf[pending:], pcm)
			pending += n
			pcm = pcm[n:]
			if pending == playBlock {
				if err := stream.Write(); err != nil {
					return fmt.Errorf("audio output: %w", err)
				}
				pending = 0
			}
		}
		return nil
	}
	closePlayer := func() error {
		var err error
		if pending > 0 {
			clear(buf[pending:])
			err = stream.Write()
		}
		if serr := stream.Stop(); err == nil {
			err = serr
		}
		if cerr := stream.Close(); err == nil {
			err = cerr
		}
		portaudio.Terminate()
		if err != nil {
			return fmt.Errorf("audio output: %w", err)
		}
		return nil
	}
	return play, closePlayer, nil
}
