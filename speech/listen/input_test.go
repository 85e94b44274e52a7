package listen

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
	"go.uber.org/goleak"
)

// wavBytes encodes samples as a 16-bit WAV at rate.
func wavBytes(t *testing.T, rate int, samples []float32) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := audio.WriteWAV(&b, audio.Clip{Samples: samples, SampleRate: rate}, audio.Int16); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// drain runs an opened input through a pipeline and returns the samples
// delivered, the rate they came at, and the run's error.
func drain(t *testing.T, in Input, accept ...int) ([]float32, *source, error) {
	t.Helper()
	src, err := in.open(context.Background(), accept, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	defer src.close()
	var frames [][]float32
	p := pipeline.New("test")
	pipeline.To(pipeline.From(p, src.src), stage.Collect("sink", &frames))
	err = p.Run(context.Background())
	var all []float32
	for _, f := range frames {
		all = append(all, f...)
	}
	return all, src, err
}

// withRate returns a copy of a canonical 44-byte-header WAV whose header
// claims rate.
func withRate(wav []byte, rate uint32) []byte {
	b := bytes.Clone(wav)
	binary.LittleEndian.PutUint32(b[24:], rate)
	binary.LittleEndian.PutUint32(b[28:], 2*rate)
	return b
}

func ramp(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%200-100) / 128
	}
	return x
}

// readTestdata returns a compressed test clip (testenv.AudioFixture:
// encoded by flac, lame, oggenc or opusenc from jfk.wav or a test signal).
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.AudioFixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInputs: every input delivers its samples at a rate the consumer
// takes, resampling the others; bad inputs fail when made or opened, with
// the error that names the problem.
func TestInputs(t *testing.T) {
	defer goleak.VerifyNone(t)
	x := ramp(10000)
	wav16 := wavBytes(t, 16000, x)
	for _, c := range []struct {
		name    string
		in      func() (Input, error)
		accept  []int
		rate    int // of the delivered samples
		samples int // delivered, ±1 for resampling
		cut     bool
		err     error // from making or running the input
	}{
		{"wav at 16 kHz", func() (Input, error) { return File(bytes.NewReader(wav16)) }, []int{16000}, 16000, 10000, false, nil},
		{"wav at 8 kHz taken as is", func() (Input, error) { return File(bytes.NewReader(wavBytes(t, 8000, x))) }, []int{16000, 8000}, 8000, 10000, false, nil},
		{"wav at 48 kHz resampled", func() (Input, error) { return File(bytes.NewReader(wavBytes(t, 48000, x))) }, []int{16000}, 16000, 3333, false, nil},
		{"wav cut short", func() (Input, error) { return File(bytes.NewReader(wav16[:44+2*6000+1])) }, []int{16000}, 16000, 6000, true, nil},
		{"raw", func() (Input, error) { return Raw(bytes.NewReader(wav16[44:]), audio.S16Mono(16000)) }, []int{16000}, 16000, 10000, false, nil},
		{"pcm at 24 kHz", func() (Input, error) { return PCM(audio.Clip{Samples: x, SampleRate: 24000}) }, []int{16000}, 16000, 6667, false, nil},
		{"pcm at 16 kHz", func() (Input, error) { return PCM(audio.Clip{Samples: x, SampleRate: 16000}) }, []int{16000}, 16000, 10000, false, nil},
		{"empty wav", func() (Input, error) { return File(bytes.NewReader(wavBytes(t, 16000, nil))) }, nil, 0, 0, false, ErrEmptyAudio},
		{"not audio", func() (Input, error) { return File(bytes.NewReader([]byte("hello, this is not audio"))) }, nil, 0, 0, false, audio.ErrUnknownFormat},
		{"flac by content", func() (Input, error) { return File(bytes.NewReader(readTestdata(t, "jfk-1s.flac"))) }, []int{16000}, 16000, 16000, false, nil},
		{"mp3 at 48 kHz by content", func() (Input, error) { return File(bytes.NewReader(readTestdata(t, "jfk-2s-48k.mp3"))) }, []int{16000}, 16000, 32000, false, nil},
		{"ogg/vorbis by content", func() (Input, error) { return File(bytes.NewReader(readTestdata(t, "jfk-11s.ogg"))) }, []int{16000}, 16000, 176000, false, nil},
		{"ogg/vorbis stereo at 48 kHz resampled", func() (Input, error) { return File(bytes.NewReader(readTestdata(t, "tones-stereo-48k.ogg"))) }, []int{16000}, 16000, 8000, false, nil},
		{"ogg/vorbis cut short", func() (Input, error) { return File(bytes.NewReader(readTestdata(t, "jfk-11s.ogg")[:30000])) }, []int{16000}, 16000, 98816, true, nil},
		{"ogg/opus named", func() (Input, error) { return File(bytes.NewReader(readTestdata(t, "jfk-1s.opus"))) }, nil, 0, 0, false, audio.ErrUnsupportedCodec},
		{"empty raw", func() (Input, error) { return Raw(bytes.NewReader(nil), audio.S16Mono(16000)) }, []int{16000}, 0, 0, false, ErrEmptyAudio},
		{"empty pcm", func() (Input, error) { return PCM(audio.Clip{SampleRate: 16000}) }, nil, 0, 0, false, ErrEmptyAudio},
		{"pcm without a rate", func() (Input, error) { return PCM(audio.Clip{Samples: x}) }, nil, 0, 0, false, audio.ErrSampleRate},
		{"wav at 1 Hz", func() (Input, error) { return File(bytes.NewReader(withRate(wav16, 1))) }, nil, 0, 0, false, audio.ErrSampleRate},
		{"stream at 500 Hz", func() (Input, error) { return NewStream(500) }, nil, 0, 0, false, audio.ErrSampleRate},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := c.in()
			var got []float32
			var src *source
			if err == nil {
				got, src, err = drain(t, in, c.accept...)
			}
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("error %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if src.rate != c.rate || len(got) < c.samples-1 || len(got) > c.samples+1 {
				t.Errorf("%d samples at %d Hz, want %d at %d", len(got), src.rate, c.samples, c.rate)
			}
			if (src.cut != nil) != c.cut || c.cut && !errors.Is(src.cut, audio.ErrTruncated) {
				t.Errorf("cut %v, want cut %v", src.cut, c.cut)
			}
			if c.rate == 16000 && c.samples == 10000 && !c.cut {
				for i := range got {
					if d := got[i] - x[i]; d > 1e-4 || d < -1e-4 {
						t.Fatalf("sample %d: %v, want %v", i, got[i], x[i])
					}
				}
			}
			if _, _, err := drain(t, in, c.accept...); !errors.Is(err, ErrInputUsed) {
				t.Errorf("second run: %v, want ErrInputUsed", err)
			}
		})
	}
}

// TestStream: what is written before Close is delivered in order, then
// the stream ends; writes after Close, or after the run stopped reading,
// fail instead of blocking.
func TestStream(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, err := NewStream(8000)
	if err != nil {
		t.Fatal(err)
	}
	x := ramp(3000)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < len(x); i += 160 { // 20 ms blocks
			if err := s.Write(context.Background(), x[i:min(i+160, len(x))]); err != nil {
				done <- err
				return
			}
		}
		done <- s.Close()
	}()
	got, src, err := drain(t, s, 8000)
	if err != nil || <-done != nil {
		t.Fatal(err)
	}
	if src.rate != 8000 || len(got) != len(x) || got[2999] != x[2999] {
		t.Fatalf("%d samples at %d Hz, want %d at 8000", len(got), src.rate, len(x))
	}
	if err := s.Write(context.Background(), x); !errors.Is(err, ErrStreamClosed) {
		t.Errorf("write after close: %v", err)
	}

	// A run that stops (here: its context ends) unblocks the writer.
	s, _ = NewStream(16000)
	ctx, cancel := context.WithCancel(context.Background())
	src, err = s.open(ctx, []int{16000}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p := pipeline.New("test")
	pipeline.To(pipeline.From(p, src.src), stage.Discard[[]float32]("sink"))
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	if err := s.Write(ctx, x); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("run: %v, want canceled", err)
	}
	src.close()
	for range 10 { // more than the queue holds: a write must fail, not block
		if err = s.Write(context.Background(), x); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrStreamClosed) {
		t.Errorf("write after the run: %v, want ErrStreamClosed", err)
	}
}

// TestMicrophoneUnavailable: without a capture device (no portaudio tag,
// or none on this machine) a microphone run fails when it starts, naming
// the microphone.
func TestMicrophoneUnavailable(t *testing.T) {
	_, _, err := drain(t, Microphone(""), 16000)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("microphone")) {
		t.Fatalf("error %v, want one naming the microphone", err)
	}
}
