package stage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tensorforge/forge/stage"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run drives s by hand: feeds inputs, closes its input, collects outputs,
// closes its output after Run returns (as a pipeline does).
func run[In, Out any](ctx context.Context, s *stage.Stage[In, Out], inputs []stage.Frame[In]) ([]stage.Frame[Out], *stage.Metrics, error) {
	in := make(chan stage.Frame[In], 2)
	out := make(chan stage.Frame[Out], 2)
	m := stage.NewMetrics(s.Name(), s.Kind())
	go func() {
		defer close(in)
		for _, f := range inputs {
			select {
			case in <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	errc := make(chan error, 1)
	go func() {
		errc <- s.Run(ctx, in, out, m)
		close(out)
	}()
	var got []stage.Frame[Out]
	for f := range out {
		got = append(got, f)
	}
	return got, m, <-errc
}

func frames[T any](rate int, payloads ...T) []stage.Frame[T] {
	t0 := time.Now()
	fs := make([]stage.Frame[T], len(payloads))
	for i, p := range payloads {
		fs[i] = stage.Frame[T]{Offset: int64(i), Rate: rate, Entered: t0.Add(time.Duration(i) * time.Millisecond), Payload: p}
	}
	return fs
}

func TestMapKeepsOrderAndTiming(t *testing.T) {
	in := frames(16000, 1, 2, 3, 4, 5)
	got, m, err := run(context.Background(), stage.Map("double", func(_ context.Context, v int) (int, error) { return 2 * v, nil }), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d frames, want %d", len(got), len(in))
	}
	for i, f := range got {
		if f.Payload != 2*in[i].Payload || f.Offset != in[i].Offset || f.Rate != 16000 || !f.Entered.Equal(in[i].Entered) {
			t.Errorf("frame %d = %+v, want doubled payload with the input's timing %+v", i, f, in[i])
		}
	}
	s := m.Snapshot()
	if s.FramesIn != 5 || s.FramesOut != 5 || s.Latency.Count != 5 || s.Kind != stage.KindMap || s.Name != "double" {
		t.Errorf("metrics %+v", s)
	}
	if s.FirstIn.IsZero() || s.FirstOut.Before(s.FirstIn) {
		t.Errorf("first-frame times wrong: in %v out %v", s.FirstIn, s.FirstOut)
	}
}

func TestMapFrameRetimes(t *testing.T) {
	// Halve the rate as a 2:1 decimator would.
	s := stage.MapFrame("decimate", func(_ context.Context, f stage.Frame[[]int]) (stage.Frame[[]int], error) {
		out := make([]int, 0, len(f.Payload)/2)
		for i := 0; i < len(f.Payload); i += 2 {
			out = append(out, f.Payload[i])
		}
		return stage.Frame[[]int]{Offset: f.Offset / 2, Rate: f.Rate / 2, Entered: f.Entered, Payload: out}, nil
	})
	got, _, err := run(context.Background(), s, []stage.Frame[[]int]{{Offset: 32000, Rate: 32000, Payload: []int{1, 2, 3, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Offset != 16000 || got[0].Rate != 16000 || !slices.Equal(got[0].Payload, []int{1, 3}) || got[0].Media() != time.Second {
		t.Fatalf("got %+v", got)
	}
}

// splitter emits each word of a line, and at the end a count of lines.
type splitter struct{ lines int }

func (s *splitter) Process(_ context.Context, f stage.Frame[string], emit stage.Emit[string]) error {
	s.lines++
	for i, w := range strings.Fields(f.Payload) {
		g := stage.Derive(f, w)
		g.Offset = f.Offset*100 + int64(i)
		if err := emit(g); err != nil {
			return err
		}
	}
	return nil
}

func (s *splitter) Flush(_ context.Context, emit stage.Emit[string]) error {
	return emit(stage.Frame[string]{Offset: -1, Payload: strings.Repeat("#", s.lines)})
}

func TestProcessFlatMapsAndFlushes(t *testing.T) {
	got, m, err := run(context.Background(), stage.Process("split", &splitter{}), frames(0, "a b", "", "c d e"))
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	var offs []int64
	for _, f := range got {
		words = append(words, f.Payload)
		offs = append(offs, f.Offset)
	}
	if strings.Join(words, ",") != "a,b,c,d,e,###" || !slices.Equal(offs, []int64{0, 1, 200, 201, 202, -1}) {
		t.Fatalf("got %q at %v", words, offs)
	}
	if s := m.Snapshot(); s.FramesIn != 3 || s.FramesOut != 6 || s.Kind != stage.KindFlatMap {
		t.Errorf("metrics %+v", s)
	}
}

func TestFlatMapFunc(t *testing.T) {
	rep := stage.FlatMap("repeat", func(_ context.Context, f stage.Frame[int], emit stage.Emit[int]) error {
		for range f.Payload {
			if err := emit(f); err != nil {
				return err
			}
		}
		return nil
	})
	got, _, err := run(context.Background(), rep, frames(0, 0, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	var ps []int
	for _, f := range got {
		ps = append(ps, f.Payload)
	}
	if !slices.Equal(ps, []int{1, 2, 2, 3, 3, 3}) {
		t.Fatalf("got %v", ps)
	}
}

func TestBatchBySize(t *testing.T) {
	in := frames(0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	got, _, err := run(context.Background(), stage.Batch[int]("batch", 4, 0), in)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}
	if len(got) != len(want) {
		t.Fatalf("got %d batches, want %d", len(got), len(want))
	}
	for i, f := range got {
		if !slices.Equal(f.Payload, want[i]) || f.Offset != int64(4*i) || !f.Entered.Equal(in[4*i].Entered) {
			t.Errorf("batch %d = %+v, want %v with the timing of its first frame", i, f, want[i])
		}
	}
}

func TestBatchUnbounded(t *testing.T) {
	got, _, err := run(context.Background(), stage.Batch[int]("all", 0, 0), frames(0, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[0].Payload, []int{1, 2, 3}) {
		t.Fatalf("got %+v", got)
	}
}

// A batch with a time bound is sent while the input is still open.
func TestBatchByTime(t *testing.T) {
	ctx := context.Background()
	in := make(chan stage.Frame[int], 4)
	out := make(chan stage.Frame[[]int], 4)
	errc := make(chan error, 1)
	go func() { errc <- stage.Batch[int]("batch", 100, 5*time.Millisecond).Run(ctx, in, out, nil); close(out) }()
	in <- stage.Frame[int]{Payload: 1}
	in <- stage.Frame[int]{Payload: 2}
	select {
	case f := <-out:
		if !slices.Equal(f.Payload, []int{1, 2}) {
			t.Errorf("timed batch = %v, want [1 2]", f.Payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no batch sent after its time bound")
	}
	in <- stage.Frame[int]{Payload: 3}
	close(in)
	if f := <-out; !slices.Equal(f.Payload, []int{3}) {
		t.Errorf("final batch = %v, want [3]", f.Payload)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestRechunk(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
		n     int
	}{
		{"mixed", []int{3, 5, 1, 7}, 4},
		{"exact", []int{4, 4, 8}, 4},
		{"tiny inputs", []int{1, 1, 1, 1, 1}, 2},
		{"one big", []int{10}, 3},
		{"empty frames", []int{0, 2, 0, 2}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in []stage.Frame[[]float32]
			var all []float32
			off := int64(1000)
			t0 := time.Now()
			for i, n := range tc.sizes {
				p := make([]float32, n)
				for j := range p {
					p[j] = float32(len(all) + j)
				}
				all = append(all, p...)
				in = append(in, stage.Frame[[]float32]{Offset: off, Rate: 16000, Entered: t0.Add(time.Duration(i) * time.Second), Payload: p})
				off += int64(n)
			}
			got, _, err := run(context.Background(), stage.Rechunk[float32]("rechunk", tc.n), in)
			if err != nil {
				t.Fatal(err)
			}
			var joined []float32
			for i, f := range got {
				if i < len(got)-1 && len(f.Payload) != tc.n {
					t.Errorf("chunk %d has %d samples, want %d", i, len(f.Payload), tc.n)
				}
				if f.Offset != 1000+int64(i*tc.n) || f.Rate != 16000 {
					t.Errorf("chunk %d at offset %d rate %d, want %d", i, f.Offset, f.Rate, 1000+i*tc.n)
				}
				// The chunk's first sample came from the input frame whose
				// span holds it; its Entered is the earliest in the chunk.
				first := int(f.Payload[0])
				seen := 0
				for k, n := range tc.sizes {
					if first < seen+n {
						if !f.Entered.Equal(in[k].Entered) {
							t.Errorf("chunk %d entered %v, want that of input %d", i, f.Entered, k)
						}
						break
					}
					seen += n
				}
				joined = append(joined, f.Payload...)
			}
			if !slices.Equal(joined, all) {
				t.Fatalf("rechunked stream differs: got %v want %v", joined, all)
			}
			// Chunks must not share spare capacity: appending to one must
			// not overwrite the next.
			if len(got) > 1 {
				first := got[0].Payload
				_ = append(first, -1)
				if got[1].Payload[0] == -1 {
					t.Error("appending to a chunk overwrote the next one")
				}
			}
		})
	}
}

func TestSources(t *testing.T) {
	ctx := context.Background()
	t.Run("slice", func(t *testing.T) {
		got, err := drain(ctx, stage.FromSlice("s", []string{"a", "b"}))
		if err != nil || len(got) != 2 || got[1].Payload != "b" || got[1].Offset != 1 || got[0].Entered.IsZero() {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("seq", func(t *testing.T) {
		got, err := drain(ctx, stage.FromSeq("s", slices.Values([]int{7, 8, 9})))
		if err != nil || len(got) != 3 || got[2].Payload != 9 || got[2].Offset != 2 {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("func error is named", func(t *testing.T) {
		bad := errors.New("device unplugged")
		n := 0
		_, err := drain(ctx, stage.FromFunc("mic", func(context.Context) (int, error) {
			n++
			if n == 3 {
				return 0, bad
			}
			return n, nil
		}))
		var se *stage.Error
		if !errors.Is(err, bad) || !errors.As(err, &se) || se.Stage != "mic" {
			t.Fatalf("err = %v, want device unplugged from stage mic", err)
		}
	})
	t.Run("samples", func(t *testing.T) {
		bufs := [][]int16{{1, 2, 3}, {}, {4, 5}}
		i := 0
		got, err := drain(ctx, stage.FromSamples("mic", 8000, func(context.Context) ([]int16, error) {
			if i == len(bufs) {
				return nil, io.EOF
			}
			i++
			return bufs[i-1], nil
		}))
		if err != nil || len(got) != 2 || got[1].Offset != 3 || got[1].Rate != 8000 || got[1].Media() != 375*time.Microsecond {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("samples with data and EOF together", func(t *testing.T) {
		done := false
		got, err := drain(ctx, stage.FromSamples("f", 10, func(context.Context) ([]float32, error) {
			if done {
				t.Fatal("read called after io.EOF")
			}
			done = true
			return []float32{1, 2}, io.EOF
		}))
		if err != nil || len(got) != 1 || len(got[0].Payload) != 2 {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("reader", func(t *testing.T) {
		got, err := drain(ctx, stage.FromReader("r", iotest.OneByteReader(strings.NewReader("hello world")), 4))
		var parts []string
		for _, f := range got {
			parts = append(parts, string(f.Payload))
		}
		if err != nil || strings.Join(parts, "|") != "hell|o wo|rld" || got[2].Offset != 8 {
			t.Fatalf("got %q, %v", parts, err)
		}
	})
	t.Run("reader error", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("abcd"), iotest.ErrReader(errors.New("disk gone")))
		_, err := drain(ctx, stage.FromReader("r", r, 4))
		if err == nil || !strings.Contains(err.Error(), "disk gone") || !strings.Contains(err.Error(), "byte 4") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFromPCM16(t *testing.T) {
	samples := []int16{0, 16384, -32768, 32767, -1}
	var raw bytes.Buffer
	for _, s := range samples {
		_ = binary.Write(&raw, binary.LittleEndian, s)
	}
	got, err := drain(context.Background(), stage.FromPCM16("wav", bytes.NewReader(raw.Bytes()), 16000, 2))
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	for i, f := range got {
		if f.Offset != int64(2*i) || f.Rate != 16000 {
			t.Errorf("frame %d at %d/%d", i, f.Offset, f.Rate)
		}
		pcm = append(pcm, f.Payload...)
	}
	want := []float32{0, 0.5, -1, 32767.0 / 32768, -1.0 / 32768}
	if !slices.Equal(pcm, want) {
		t.Fatalf("pcm = %v, want %v", pcm, want)
	}
	_, err = drain(context.Background(), stage.FromPCM16("wav", bytes.NewReader(raw.Bytes()[:5]), 16000, 4))
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("odd byte count: err = %v, want a truncation error", err)
	}
}

// drain runs a source into a slice.
func drain[T any](ctx context.Context, s *stage.Source[T]) ([]stage.Frame[T], error) {
	out := make(chan stage.Frame[T])
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx, out, nil); close(out) }()
	var got []stage.Frame[T]
	for f := range out {
		got = append(got, f)
	}
	return got, <-errc
}

func TestSourceStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan stage.Frame[int])
	errc := make(chan error, 1)
	forever := iter.Seq[int](func(yield func(int) bool) {
		for i := 0; yield(i); i++ {
		}
	})
	go func() { errc <- stage.FromSeq("forever", forever).Run(ctx, out, nil) }()
	<-out
	<-out
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestSinkAndCollect(t *testing.T) {
	in := make(chan stage.Frame[int], 3)
	t0 := time.Now().Add(-time.Second)
	for i := range 3 {
		in <- stage.Frame[int]{Payload: i, Entered: t0}
	}
	close(in)
	var got []int
	m := stage.NewMetrics("c", stage.KindSink)
	if err := stage.Collect("c", &got).Run(context.Background(), in, m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("collected %v", got)
	}
	s := m.Snapshot()
	if s.EndToEnd.Count != 3 || s.EndToEnd.P50 < time.Second {
		t.Errorf("end-to-end latency %+v, want 3 frames at least 1s old", s.EndToEnd)
	}
}

func TestSinkError(t *testing.T) {
	in := make(chan stage.Frame[int], 1)
	in <- stage.Frame[int]{}
	full := errors.New("disk full")
	err := stage.ToFunc("wav", func(context.Context, stage.Frame[int]) error { return full }).Run(context.Background(), in, nil)
	var se *stage.Error
	if !errors.Is(err, full) || !errors.As(err, &se) || se.Stage != "wav" || err.Error() != `stage "wav": disk full` {
		t.Fatalf("err = %v", err)
	}
}

func TestStageStopsWhenBlockedOnSend(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan stage.Frame[int], 1)
	out := make(chan stage.Frame[int]) // nobody reads
	in <- stage.Frame[int]{Payload: 1}
	errc := make(chan error, 1)
	go func() {
		errc <- stage.Map("id", func(_ context.Context, v int) (int, error) { return v, nil }).Run(ctx, in, out, nil)
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// After a cancellation a closed input is not a clean end: no flush.
func TestClosedInputAfterCancelIsNotClean(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := make(chan stage.Frame[string])
	close(in)
	out := make(chan stage.Frame[string], 1)
	err := stage.Process[string, string]("split", &splitter{}).Run(ctx, in, out, nil)
	if !errors.Is(err, context.Canceled) || len(out) != 0 {
		t.Fatalf("err = %v, %d frames flushed; want context.Canceled and none", err, len(out))
	}
}

func TestPanicIsAnError(t *testing.T) {
	s := stage.Map("oops", func(_ context.Context, v []int) (int, error) { return v[3], nil })
	_, _, err := run(context.Background(), s, frames(0, []int{1}))
	var pe *stage.PanicError
	var se *stage.Error
	if !errors.As(err, &pe) || !errors.As(err, &se) || se.Stage != "oops" || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("err = %v, want a PanicError from stage oops", err)
	}
}

func TestTeeAndMerge(t *testing.T) {
	ctx := context.Background()
	in := make(chan stage.Frame[int], 8)
	a, b := make(chan stage.Frame[int], 8), make(chan stage.Frame[int], 8)
	for i := range 5 {
		in <- stage.Frame[int]{Payload: i}
	}
	close(in)
	if err := stage.Tee(ctx, in, []chan<- stage.Frame[int]{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	close(a)
	close(b)
	merged := make(chan stage.Frame[int], 16)
	m := stage.NewMetrics("merge", stage.KindMerge)
	if err := stage.Merge(ctx, []<-chan stage.Frame[int]{a, b}, merged, m); err != nil {
		t.Fatal(err)
	}
	close(merged)
	sum := 0
	for f := range merged {
		sum += f.Payload
	}
	if sum != 20 || m.Snapshot().FramesOut != 10 {
		t.Fatalf("merged sum %d, frames %d; want 20 and 10", sum, m.Snapshot().FramesOut)
	}
}

func TestFrameMedia(t *testing.T) {
	tests := []struct {
		off  int64
		rate int
		want time.Duration
	}{
		{0, 16000, 0},
		{16000, 16000, time.Second},
		{8000, 16000, 500 * time.Millisecond},
		{1, 24000, 41666 * time.Nanosecond},
		{24000*3600*10 + 12, 24000, 10*time.Hour + 500*time.Microsecond},
		{5, 0, 0},
	}
	for _, tc := range tests {
		f := stage.Frame[int]{Offset: tc.off, Rate: tc.rate}
		if got := f.Media(); got != tc.want {
			t.Errorf("Media(%d @ %d) = %v, want %v", tc.off, tc.rate, got, tc.want)
		}
	}
	if (stage.Frame[int]{}).Age(time.Now()) != 0 {
		t.Error("a frame without an entry time has an age")
	}
}
