// Package device captures audio from and plays audio to sound devices
// through PortAudio (github.com/gordonklaus/portaudio, cgo).
//
// PortAudio is only compiled in with the build tag portaudio
// (go build -tags portaudio; needs portaudio19-dev). Without it the package
// still builds, with CGO_ENABLED=0, and every function that would touch a
// device returns ErrNoAudio, so a command can fall back to files.
//
// Capture and Playback are plain blocking streams of mono float32 samples
// at the rate you ask for. When the device cannot run at that rate it runs
// at its default rate and the stream converts with dsp/resample, so a
// 48 kHz-only microphone still delivers 16 kHz frames. Source and Sink wrap
// them as pipeline stages.
package device

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tensorforge/forge/dsp/resample"
)

// Errors for device use.
var (
	// ErrNoAudio: this binary was built without PortAudio.
	ErrNoAudio = errors.New("built without audio devices; rebuild with -tags portaudio or write to a file")
	// ErrNoDevice: no device matches the request, or there is no default.
	ErrNoDevice = errors.New("audio device not found")
	// ErrConfig: the Config is invalid.
	ErrConfig = errors.New("invalid audio device config")
	// ErrClosed: the stream was closed.
	ErrClosed = errors.New("audio stream closed")
)

// Info describes one device.
type Info struct {
	Index          int     // PortAudio device index
	Name           string  // device name as the host API reports it
	HostAPI        string  // e.g. "ALSA", "Core Audio"
	InputChannels  int     // maximum capture channels (0: playback only)
	OutputChannels int     // maximum playback channels (0: capture only)
	DefaultRate    float64 // the device's preferred sample rate, Hz
	DefaultInput   bool    // the host's default capture device
	DefaultOutput  bool    // the host's default playback device
}

// Config selects a device and the stream format.
type Config struct {
	// Device is "" for the default device, a device index ("3"), an exact
	// device name, or a case-insensitive substring matching exactly one
	// device of the right direction.
	Device string
	// SampleRate of the samples the stream delivers or accepts, Hz; 0 means
	// the device's default rate.
	SampleRate int
	// FrameSize is the device buffer in samples (at the device rate); 0
	// means 10 ms.
	FrameSize int
}

func (c Config) validate() error {
	switch {
	case c.SampleRate < 0 || c.SampleRate > resample.MaxRate:
		return fmt.Errorf("%w: sample rate %d", ErrConfig, c.SampleRate)
	case c.FrameSize < 0 || c.FrameSize > 1<<20:
		return fmt.Errorf("%w: frame size %d", ErrConfig, c.FrameSize)
	}
	return nil
}

// Devices lists the devices PortAudio sees.
func Devices() ([]Info, error) { return devices() }

// pick chooses the device for cfg among infos: input devices when input,
// else output devices.
func pick(infos []Info, name string, input bool) (Info, error) {
	usable := func(d Info) bool {
		if input {
			return d.InputChannels > 0
		}
		return d.OutputChannels > 0
	}
	dir := "playback"
	if input {
		dir = "capture"
	}
	var names []string
	for _, d := range infos {
		if usable(d) {
			names = append(names, fmt.Sprintf("%d %q", d.Index, d.Name))
		}
	}
	fail := func(why string) (Info, error) {
		if len(names) == 0 {
			return Info{}, fmt.Errorf("%w: %s; there are no %s devices", ErrNoDevice, why, dir)
		}
		return Info{}, fmt.Errorf("%w: %s; %s devices: %s", ErrNoDevice, why, dir, strings.Join(names, ", "))
	}
	if name == "" {
		for _, d := range infos {
			if usable(d) && ((input && d.DefaultInput) || (!input && d.DefaultOutput)) {
				return d, nil
			}
		}
		return fail("no default " + dir + " device")
	}
	if i, err := strconv.Atoi(name); err == nil {
		for _, d := range infos {
			if d.Index == i && usable(d) {
				return d, nil
			}
		}
		return fail(fmt.Sprintf("no %s device with index %d", dir, i))
	}
	for _, d := range infos {
		if usable(d) && d.Name == name {
			return d, nil
		}
	}
	var found []Info
	for _, d := range infos {
		if usable(d) && strings.Contains(strings.ToLower(d.Name), strings.ToLower(name)) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return fail(fmt.Sprintf("no %s device named like %q", dir, name))
	}
	return fail(fmt.Sprintf("%q matches %d %s devices", name, len(found), dir))
}

// blockDevice is an open device stream moving fixed-size blocks of mono
// samples at the device rate; the PortAudio build provides one.
type blockDevice interface {
	// readBlock returns the next captured block (valid until the next
	// call); overflowed reports that the device dropped input before it.
	readBlock() (block []float32, overflowed bool, err error)
	// writeBlock queues one block for playback (len = the block size).
	writeBlock(block []float32) (underflowed bool, err error)
	blockSize() int
	// close stops the stream (after playing what is queued) and releases
	// the device.
	close() error
}

// Capture is an open capture stream. It is not safe for concurrent use
// (one goroutine reads); Close may be called from another goroutine only
// when no Read is in progress.
type Capture struct {
	dev       blockDevice
	info      Info
	rate      int
	rs        *resample.Resampler // nil when the device runs at rate
	pending   []float32           // converted samples not yet returned
	conv      []float32
	overflows int64
	closed    bool
}

// OpenCapture opens a capture device.
func OpenCapture(cfg Config) (*Capture, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dev, info, devRate, err := openDevice(cfg, true)
	if err != nil {
		return nil, err
	}
	return newCapture(dev, info, devRate, cfg.SampleRate)
}

func newCapture(dev blockDevice, info Info, devRate, rate int) (*Capture, error) {
	if rate == 0 {
		rate = devRate
	}
	c := &Capture{dev: dev, info: info, rate: rate}
	if devRate != rate {
		rs, err := resample.New(devRate, rate)
		if err != nil {
			dev.close()
			return nil, err
		}
		c.rs = rs
	}
	return c, nil
}

// Info describes the device in use.
func (c *Capture) Info() Info { return c.info }

// SampleRate returns the rate of the samples Read delivers, Hz.
func (c *Capture) SampleRate() int { return c.rate }

// Overflows counts the times the device dropped input because Read was
// not called fast enough.
func (c *Capture) Overflows() int64 { return c.overflows }

// Read fills buf with the next mono samples, blocking until it is full.
// It returns early with ctx's error if ctx is cancelled; cancellation is
// noticed between device blocks (FrameSize samples, 10 ms by default).
func (c *Capture) Read(ctx context.Context, buf []float32) (int, error) {
	n := 0
	for n < len(buf) {
		if c.closed {
			return n, ErrClosed
		}
		if len(c.pending) == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			block, over, err := c.dev.readBlock()
			if err != nil {
				return n, fmt.Errorf("audio capture from %q: %w", c.info.Name, err)
			}
			if over {
				c.overflows++
			}
			if c.rs != nil {
				c.conv = c.rs.Process(c.conv[:0], block)
				c.pending = c.conv
			} else {
				c.pending = block
			}
		}
		k := copy(buf[n:], c.pending)
		c.pending = c.pending[k:]
		n += k
	}
	return n, nil
}

// Close stops capturing and releases the device.
func (c *Capture) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.dev.close()
}

// Playback is an open playback stream. It is not safe for concurrent use.
type Playback struct {
	dev        blockDevice
	info       Info
	rate       int
	rs         *resample.Resampler
	conv       []float32
	block      []float32 // partial device block being filled
	fill       int
	underflows int64
	closed     bool
}

// OpenPlayback opens a playback device.
func OpenPlayback(cfg Config) (*Playback, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dev, info, devRate, err := openDevice(cfg, false)
	if err != nil {
		return nil, err
	}
	return newPlayback(dev, info, devRate, cfg.SampleRate)
}

func newPlayback(dev blockDevice, info Info, devRate, rate int) (*Playback, error) {
	if rate == 0 {
		rate = devRate
	}
	p := &Playback{dev: dev, info: info, rate: rate, block: make([]float32, dev.blockSize())}
	if devRate != rate {
		rs, err := resample.New(rate, devRate)
		if err != nil {
			dev.close()
			return nil, err
		}
		p.rs = rs
	}
	return p, nil
}

// Info describes the device in use.
func (p *Playback) Info() Info { return p.info }

// SampleRate returns the rate Write expects, Hz.
func (p *Playback) SampleRate() int { return p.rate }

// Underflows counts the times the device ran dry because Write was not
// called fast enough (audible as a gap).
func (p *Playback) Underflows() int64 { return p.underflows }

// Write queues mono samples for playback, blocking while the device
// buffer is full. Cancellation is noticed between device blocks.
func (p *Playback) Write(ctx context.Context, samples []float32) error {
	if p.closed {
		return ErrClosed
	}
	if p.rs != nil {
		p.conv = p.rs.Process(p.conv[:0], samples)
		samples = p.conv
	}
	return p.push(ctx, samples)
}

func (p *Playback) push(ctx context.Context, samples []float32) error {
	for len(samples) > 0 {
		k := copy(p.block[p.fill:], samples)
		p.fill += k
		samples = samples[k:]
		if p.fill < len(p.block) {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		under, err := p.dev.writeBlock(p.block)
		if err != nil {
			return fmt.Errorf("audio playback to %q: %w", p.info.Name, err)
		}
		if under {
			p.underflows++
		}
		p.fill = 0
	}
	return nil
}

// Close plays what is still queued (the last block padded with silence),
// then releases the device.
func (p *Playback) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	var err error
	if p.rs != nil {
		err = p.push(context.Background(), p.rs.Flush(p.conv[:0]))
	}
	if err == nil && p.fill > 0 {
		clear(p.block[p.fill:])
		_, err = p.dev.writeBlock(p.block)
		p.fill = 0
	}
	if cerr := p.dev.close(); err == nil {
		err = cerr
	}
	return err
}
