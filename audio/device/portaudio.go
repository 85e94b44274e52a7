//go:build portaudio

package device

import (
	"errors"
	"fmt"
	"math"

	"github.com/gordonklaus/portaudio"
)

// devices lists PortAudio's devices. PortAudio counts Initialize and
// Terminate calls, so each listing and each open stream holds its own
// reference and no package state is needed.
func devices() ([]Info, error) {
	if err := portaudio.Initialize(); err != nil {
		return nil, fmt.Errorf("portaudio: initialize: %w", err)
	}
	defer portaudio.Terminate()
	_, infos, err := listDevices()
	return infos, err
}

func listDevices() ([]*portaudio.DeviceInfo, []Info, error) {
	devs, err := portaudio.Devices()
	if err != nil {
		return nil, nil, fmt.Errorf("portaudio: listing devices: %w", err)
	}
	defIn, _ := portaudio.DefaultInputDevice()
	defOut, _ := portaudio.DefaultOutputDevice()
	infos := make([]Info, len(devs))
	for i, d := range devs {
		infos[i] = Info{
			Index: d.Index, Name: d.Name,
			InputChannels: d.MaxInputChannels, OutputChannels: d.MaxOutputChannels,
			DefaultRate:   d.DefaultSampleRate,
			DefaultInput:  defIn != nil && defIn.Index == d.Index,
			DefaultOutput: defOut != nil && defOut.Index == d.Index,
		}
		if d.HostApi != nil {
			infos[i].HostAPI = d.HostApi.Name
		}
	}
	return devs, infos, nil
}

// paStream is an open blocking PortAudio stream of mono float32.
type paStream struct {
	s     *portaudio.Stream
	buf   []float32 // the buffer bound to the stream
	input bool
}

func openDevice(cfg Config, input bool) (blockDevice, Info, int, error) {
	if err := portaudio.Initialize(); err != nil {
		return nil, Info{}, 0, fmt.Errorf("portaudio: initialize: %w", err)
	}
	dev, info, rate, err := open(cfg, input)
	if err != nil {
		portaudio.Terminate()
		return nil, Info{}, 0, err
	}
	return dev, info, rate, nil
}

func open(cfg Config, input bool) (*paStream, Info, int, error) {
	devs, infos, err := listDevices()
	if err != nil {
		return nil, Info{}, 0, err
	}
	info, err := pick(infos, cfg.Device, input)
	if err != nil {
		return nil, Info{}, 0, err
	}
	var d *portaudio.DeviceInfo
	for _, x := range devs {
		if x.Index == info.Index {
			d = x
		}
	}
	// Run the device at the requested rate if it can, else at its own
	// default rate (the stream then resamples).
	rates := []int{int(math.Round(d.DefaultSampleRate))}
	if cfg.SampleRate > 0 && cfg.SampleRate != rates[0] {
		rates = []int{cfg.SampleRate, rates[0]}
	}
	var errs []error
	for _, rate := range rates {
		frames := cfg.FrameSize
		if frames == 0 {
			frames = max(rate/100, 1)
		}
		p := portaudio.StreamParameters{SampleRate: float64(rate), FramesPerBuffer: frames}
		sp := portaudio.StreamDeviceParameters{Device: d, Channels: 1}
		if input {
			sp.Latency = d.DefaultLowInputLatency
			p.Input = sp
		} else {
			sp.Latency = d.DefaultHighOutputLatency
			p.Output = sp
		}
		st := &paStream{buf: make([]float32, frames), input: input}
		s, err := portaudio.OpenStream(p, st.buf)
		if err != nil {
			errs = append(errs, fmt.Errorf("%d Hz: %w", rate, err))
			continue
		}
		if err := s.Start(); err != nil {
			s.Close()
			errs = append(errs, fmt.Errorf("%d Hz: starting: %w", rate, err))
			continue
		}
		st.s = s
		return st, info, rate, nil
	}
	return nil, Info{}, 0, fmt.Errorf("portaudio: opening %q: %w", info.Name, errors.Join(errs...))
}

func (p *paStream) blockSize() int { return len(p.buf) }

func (p *paStream) readBlock() ([]float32, bool, error) {
	err := p.s.Read()
	if errors.Is(err, portaudio.InputOverflowed) {
		return p.buf, true, nil
	}
	return p.buf, false, err
}

func (p *paStream) writeBlock(b []float32) (bool, error) {
	copy(p.buf, b)
	err := p.s.Write()
	if errors.Is(err, portaudio.OutputUnderflowed) {
		return true, nil
	}
	return false, err
}

func (p *paStream) close() error {
	var err error
	if p.input {
		err = p.s.Abort() // nothing queued worth waiting for
	} else {
		err = p.s.Stop() // plays out what is queued
	}
	if cerr := p.s.Close(); err == nil {
		err = cerr
	}
	if terr := portaudio.Terminate(); err == nil {
		err = terr
	}
	return err
}
