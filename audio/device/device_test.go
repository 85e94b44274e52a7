package device

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/tensorforge/forge/dsp/resample"
	"github.com/tensorforge/forge/stage"
)

// fakeDevice stands in for PortAudio: capture yields a ramp in blocks,
// playback records what it is given.
type fakeDevice struct {
	block    []float32
	next     float32
	reads    int
	overflow map[int]bool
	written  []float32
	closed   bool
}

func (f *fakeDevice) readBlock() ([]float32, bool, error) {
	for i := range f.block {
		f.block[i] = f.next
		f.next++
	}
	f.reads++
	return f.block, f.overflow[f.reads], nil
}

func (f *fakeDevice) writeBlock(b []float32) (bool, error) {
	f.written = append(f.written, b...)
	return false, nil
}

func (f *fakeDevice) blockSize() int { return len(f.block) }
func (f *fakeDevice) close() error   { f.closed = true; return nil }

func TestPick(t *testing.T) {
	infos := []Info{
		{Index: 0, Name: "HDA Intel PCH: ALC3246 Analog (hw:0,0)", InputChannels: 2, OutputChannels: 2, DefaultInput: true},
		{Index: 1, Name: "HDMI 0", OutputChannels: 8, DefaultOutput: true},
		{Index: 2, Name: "USB Microphone", InputChannels: 1},
		{Index: 3, Name: "USB Speaker", OutputChannels: 2},
	}
	for _, tc := range []struct {
		name  string
		input bool
		want  int // -1: ErrNoDevice
	}{
		{"", true, 0}, {"", false, 1}, {"2", true, 2}, {"2", false, -1},
		{"USB Microphone", true, 2}, {"usb", true, 2}, {"usb", false, 3},
		{"hdmi", true, -1}, {"a", false, -1}, {"nothing", true, -1},
	} {
		d, err := pick(infos, tc.name, tc.input)
		if tc.want < 0 {
			if !errors.Is(err, ErrNoDevice) {
				t.Errorf("pick(%q, input=%v) = %v, %v; want ErrNoDevice", tc.name, tc.input, d.Name, err)
			}
			continue
		}
		if err != nil || d.Index != tc.want {
			t.Errorf("pick(%q, input=%v) = %d, %v; want %d", tc.name, tc.input, d.Index, err, tc.want)
		}
	}
	_, err := pick(infos[1:2], "", true)
	if err == nil || !strings.Contains(err.Error(), "no capture devices") {
		t.Errorf("no capture devices: err = %v", err)
	}
	_, err = pick(infos, "nothing", true)
	if err == nil || !strings.Contains(err.Error(), `2 "USB Microphone"`) {
		t.Errorf("error should list the capture devices: %v", err)
	}
}

func TestCaptureFramesAndOverflow(t *testing.T) {
	dev := &fakeDevice{block: make([]float32, 160), overflow: map[int]bool{2: true}}
	c, err := newCapture(dev, Info{Name: "fake"}, 16000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate() != 16000 {
		t.Fatalf("rate %d", c.SampleRate())
	}
	var got []float32
	buf := make([]float32, 512)
	for range 3 {
		n, err := c.Read(context.Background(), buf)
		if err != nil || n != 512 {
			t.Fatalf("Read = %d, %v", n, err)
		}
		got = append(got, buf...)
	}
	for i, v := range got {
		if v != float32(i) {
			t.Fatalf("sample %d = %v", i, v)
		}
	}
	if c.Overflows() != 1 {
		t.Errorf("Overflows() = %d, want 1", c.Overflows())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Samples already converted are still delivered; a new block is not read.
	reads := dev.reads
	if _, err := c.Read(ctx, make([]float32, 1000)); !errors.Is(err, context.Canceled) || dev.reads != reads {
		t.Errorf("cancelled Read: err = %v, device reads %d → %d", err, reads, dev.reads)
	}
	c.Close()
	if !dev.closed {
		t.Error("Close did not close the device")
	}
	if _, err := c.Read(context.Background(), buf); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

func TestCaptureResamples(t *testing.T) {
	// A 48 kHz-only device asked for 16 kHz.
	dev := &fakeDevice{block: make([]float32, 480)}
	c, err := newCapture(dev, Info{Name: "fake"}, 48000, 16000)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4000)
	if _, err := c.Read(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	ramp := make([]float32, 48000)
	for i := range ramp {
		ramp[i] = float32(i)
	}
	r, _ := resample.New(48000, 16000)
	want := r.Process(nil, ramp)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("sample %d = %v, want %v (streamed resampling of the device blocks)", i, got[i], want[i])
		}
	}
}

func TestPlaybackBlocksAndClose(t *testing.T) {
	dev := &fakeDevice{block: make([]float32, 100)}
	p, err := newPlayback(dev, Info{Name: "fake"}, 24000, 24000)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 250)
	for i := range x {
		x[i] = float32(i + 1)
	}
	if err := p.Write(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if len(dev.written) != 200 {
		t.Fatalf("%d samples reached the device before Close, want 200 (whole blocks)", len(dev.written))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if len(dev.written) != 300 || dev.written[249] != 250 || dev.written[250] != 0 || !dev.closed {
		t.Fatalf("after Close: %d samples, [249]=%v [250]=%v closed=%v", len(dev.written), dev.written[249], dev.written[250], dev.closed)
	}
	if err := p.Write(context.Background(), x); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

func TestPlaybackResamples(t *testing.T) {
	dev := &fakeDevice{block: make([]float32, 480)}
	p, _ := newPlayback(dev, Info{Name: "fake"}, 48000, 24000)
	x := make([]float32, 2400)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.1))
	}
	p.Write(context.Background(), x[:1000])
	p.Write(context.Background(), x[1000:])
	p.Close()
	want, _ := resample.Resample(x, 24000, 48000)
	if len(dev.written) < len(want) || len(dev.written) >= len(want)+480 {
		t.Fatalf("device got %d samples for %d", len(dev.written), len(want))
	}
	for i := range want {
		if dev.written[i] != want[i] {
			t.Fatalf("sample %d = %v, want %v", i, dev.written[i], want[i])
		}
	}
}

func TestStages(t *testing.T) {
	dev := &fakeDevice{block: make([]float32, 160)}
	c, _ := newCapture(dev, Info{Name: "fake"}, 16000, 16000)
	ctx := context.Background()
	out := make(chan stage.Frame[[]float32], 16)
	if err := c.Source("mic", 512, 1300).Run(ctx, out, nil); err != nil {
		t.Fatal(err)
	}
	close(out)
	var offs []int64
	var total int
	for f := range out {
		if f.Rate != 16000 || f.Offset != int64(total) || f.Payload[0] != float32(total) {
			t.Fatalf("frame at %d: rate %d offset %d first %v", total, f.Rate, f.Offset, f.Payload[0])
		}
		offs = append(offs, f.Offset)
		total += len(f.Payload)
	}
	if total != 1300 || len(offs) != 3 {
		t.Fatalf("source gave %d samples in %d frames, want 1300 in 3", total, len(offs))
	}

	pdev := &fakeDevice{block: make([]float32, 100)}
	p, _ := newPlayback(pdev, Info{Name: "fake"}, 16000, 16000)
	in := make(chan stage.Frame[[]float32], 2)
	in <- stage.Frame[[]float32]{Payload: make([]float32, 150)}
	in <- stage.Frame[[]float32]{Payload: make([]float32, 50)}
	close(in)
	if err := p.Sink("speaker").Run(ctx, in, nil); err != nil {
		t.Fatal(err)
	}
	if len(pdev.written) != 200 {
		t.Fatalf("sink played %d samples, want 200", len(pdev.written))
	}

	// A cancelled pipeline stops an endless capture source.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Source("mic", 512, 0).Run(cctx, make(chan stage.Frame[[]float32], 1), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled source: err = %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{{SampleRate: -1}, {FrameSize: -5}, {SampleRate: 1 << 30}} {
		if _, err := OpenCapture(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("OpenCapture(%+v): err = %v, want ErrConfig", cfg, err)
		}
	}
}
