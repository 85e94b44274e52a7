package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/stage"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func inc(_ context.Context, v int) (int, error) { return v + 1, nil }

func TestChainKeepsOrderAndTiming(t *testing.T) {
	const n = 5000
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	p := pipeline.New("order", pipeline.DefaultBuffer(3))
	a := pipeline.Then(pipeline.From(p, stage.FromSlice("src", items)), stage.Map("a", inc))
	b := pipeline.Then(a, stage.Map("b", inc), pipeline.Buffer(1))
	c := pipeline.Then(b, stage.Map("c", inc), pipeline.Buffer(0))
	var got []stage.Frame[int]
	pipeline.To(c, stage.ToFunc("sink", func(_ context.Context, f stage.Frame[int]) error {
		got = append(got, f)
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("got %d frames, want %d", len(got), n)
	}
	for i, f := range got {
		if f.Payload != i+3 || f.Offset != int64(i) || f.Entered.IsZero() {
			t.Fatalf("frame %d = %+v, want payload %d offset %d and an entry time", i, f, i+3, i)
		}
	}
	m := p.Metrics()
	if !m.Finished || m.Wall <= 0 {
		t.Errorf("metrics not finished: %+v", m)
	}
	for _, s := range m.Stages {
		if s.Kind.HasInput() && s.FramesIn != n {
			t.Errorf("stage %s: frames in %d, want %d", s.Name, s.FramesIn, n)
		}
		if s.FramesOut != n {
			t.Errorf("stage %s: frames out %d, want %d", s.Name, s.FramesOut, n)
		}
		if s.QueueMax > s.QueueCap {
			t.Errorf("stage %s: queue max %d above capacity %d", s.Name, s.QueueMax, s.QueueCap)
		}
	}
	if s, _ := m.Stage("b"); s.QueueCap != 1 {
		t.Errorf("stage b queue cap %d, want 1", s.QueueCap)
	}
	if s, _ := m.Stage("a"); s.QueueCap != 3 {
		t.Errorf("stage a queue cap %d, want the default 3", s.QueueCap)
	}
	if m.EndToEnd.Count != n || m.FirstIn.IsZero() || m.FirstOut.Before(m.FirstIn) {
		t.Errorf("end-to-end view wrong: %+v first in %v out %v", m.EndToEnd, m.FirstIn, m.FirstOut)
	}
}

// A fast source feeding a slow sink must block, not buffer: the number of
// frames produced but not yet consumed never exceeds what the queues and the
// stages in between can hold, and every frame arrives.
func TestBackpressureBoundsMemoryAndLosesNothing(t *testing.T) {
	const (
		n       = 300
		buf     = 2
		payload = 64 << 10
	)
	var inFlight, maxInFlight atomic.Int64
	produced := 0
	src := stage.FromFunc("src", func(context.Context) ([]byte, error) {
		if produced == n {
			return nil, io.EOF
		}
		produced++
		v := inFlight.Add(1)
		for {
			cur := maxInFlight.Load()
			if v <= cur || maxInFlight.CompareAndSwap(cur, v) {
				break
			}
		}
		b := make([]byte, payload)
		b[0] = byte(produced)
		return b, nil
	})
	p := pipeline.New("backpressure", pipeline.DefaultBuffer(buf))
	x := pipeline.Then(pipeline.From(p, src), stage.Map("copy", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	next := int64(0)
	pipeline.To(x, stage.ToFunc("slow", func(_ context.Context, f stage.Frame[[]byte]) error {
		if f.Offset != next || f.Payload[0] != byte(next+1) {
			return fmt.Errorf("frame %d arrived where %d was due", f.Offset, next)
		}
		next++
		if next%10 == 0 {
			time.Sleep(time.Millisecond)
		}
		inFlight.Add(-1)
		return nil
	}))
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if next != n {
		t.Fatalf("sink saw %d frames, want %d", next, n)
	}
	// Two queues of buf, plus one frame held by each of source, copy and
	// sink.
	if limit := int64(2*buf + 3); maxInFlight.Load() > limit {
		t.Errorf("%d frames were in flight at once; bounded queues allow at most %d", maxInFlight.Load(), limit)
	}
	sink, _ := p.Metrics().Stage("slow")
	if sink.QueueMax != buf {
		t.Errorf("slow sink's queue peaked at %d, want it full (%d)", sink.QueueMax, buf)
	}
	src2, _ := p.Metrics().Stage("src")
	if src2.WaitOut <= 0 {
		t.Errorf("source never blocked on output: %+v", src2)
	}
}

func endless(name string) *stage.Source[int] {
	i := 0
	return stage.FromFunc(name, func(ctx context.Context) (int, error) {
		i++
		return i, nil
	})
}

func TestCancelMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := pipeline.New("cancel")
	x := pipeline.Then(pipeline.From(p, endless("src")), stage.Map("a", inc))
	seen := 0
	pipeline.To(x, stage.ToFunc("sink", func(context.Context, stage.Frame[int]) error {
		seen++
		if seen == 100 {
			cancel()
		}
		return nil
	}))
	err := p.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	var se *stage.Error
	if errors.As(err, &se) {
		t.Errorf("cancellation reported as the failure of stage %q", se.Stage)
	}
}

type flushSpy struct{ flushed atomic.Bool }

func (s *flushSpy) Process(_ context.Context, f stage.Frame[int], emit stage.Emit[int]) error {
	return emit(f)
}

func (s *flushSpy) Flush(context.Context, stage.Emit[int]) error {
	s.flushed.Store(true)
	return nil
}

func TestErrorInMiddleStageCancelsAll(t *testing.T) {
	boom := errors.New("boom")
	spy := &flushSpy{}
	p := pipeline.New("fail")
	a := pipeline.Then(pipeline.From(p, endless("src")), stage.Map("first", inc))
	b := pipeline.Then(a, stage.Map("middle", func(_ context.Context, v int) (int, error) {
		if v == 50 {
			return 0, boom
		}
		return v, nil
	}))
	c := pipeline.Then(b, stage.Process[int, int]("after", spy))
	pipeline.To(c, stage.Discard[int]("sink"))
	err := p.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	var se *stage.Error
	if !errors.As(err, &se) || se.Stage != "middle" {
		t.Fatalf("error %v does not name stage middle", err)
	}
	if !strings.Contains(err.Error(), `pipeline "fail"`) || !strings.Contains(err.Error(), `stage "middle"`) {
		t.Errorf("error text %q lacks pipeline and stage names", err)
	}
	if spy.flushed.Load() {
		t.Error("a stage after the failure flushed as if its input had ended cleanly")
	}
}

func TestPanicBecomesError(t *testing.T) {
	p := pipeline.New("panic")
	x := pipeline.Then(pipeline.From(p, stage.FromSlice("src", []int{1, 2, 3})), stage.Map("bad", func(_ context.Context, v int) (int, error) {
		if v == 2 {
			panic("model exploded")
		}
		return v, nil
	}))
	pipeline.To(x, stage.Discard[int]("sink"))
	err := p.Run(context.Background())
	var pe *stage.PanicError
	var se *stage.Error
	if !errors.As(err, &pe) || !errors.As(err, &se) || se.Stage != "bad" {
		t.Fatalf("Run = %v, want a PanicError from stage bad", err)
	}
	if len(pe.Stack) == 0 {
		t.Error("panic error has no stack")
	}
}

func TestStop(t *testing.T) {
	p := pipeline.New("stop")
	started := make(chan struct{})
	var once sync.Once
	pipeline.To(pipeline.From(p, endless("src")), stage.ToFunc("sink", func(context.Context, stage.Frame[int]) error {
		once.Do(func() { close(started) })
		return nil
	}))
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-started
	p.Stop()
	if err := p.Wait(); !errors.Is(err, pipeline.ErrStopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want ErrStopped", err)
	}
	if err := p.Start(context.Background()); !errors.Is(err, pipeline.ErrStarted) {
		t.Errorf("second Start = %v, want ErrStarted", err)
	}
}

func TestTeeAndMerge(t *testing.T) {
	const n = 1000
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	p := pipeline.New("dag")
	src := pipeline.From(p, stage.FromSlice("src", items))
	br := pipeline.Tee(src, "tee", 2)
	neg := pipeline.Then(br[0], stage.Map("neg", func(_ context.Context, v int) (int, error) { return -v - 1, nil }))
	pos := pipeline.Then(br[1], stage.Map("pos", func(_ context.Context, v int) (int, error) { return v + 1, nil }))
	all := pipeline.Merge(p, "merge", []*pipeline.Port[int]{neg, pos})
	var got []int
	pipeline.To(all, stage.Collect("sink", &got))
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n {
		t.Fatalf("got %d frames, want %d", len(got), 2*n)
	}
	lastNeg, lastPos, sum := 0, 0, 0
	for _, v := range got {
		sum += v
		switch {
		case v < 0:
			if v >= lastNeg {
				t.Fatalf("negative branch out of order: %d after %d", v, lastNeg)
			}
			lastNeg = v
		default:
			if v <= lastPos {
				t.Fatalf("positive branch out of order: %d after %d", v, lastPos)
			}
			lastPos = v
		}
	}
	if sum != 0 {
		t.Errorf("branches do not cancel out: sum %d", sum)
	}
	if tee, _ := p.Metrics().Stage("tee"); tee.FramesIn != n || tee.FramesOut != 2*n {
		t.Errorf("tee counted %d in / %d out, want %d / %d", tee.FramesIn, tee.FramesOut, n, 2*n)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(p *pipeline.Pipeline)
		want  string
	}{
		{"unconnected", func(p *pipeline.Pipeline) {
			pipeline.Then(pipeline.From(p, endless("src")), stage.Map("a", inc))
		}, `output of stage "a" is not connected`},
		{"double", func(p *pipeline.Pipeline) {
			s := pipeline.From(p, endless("src"))
			pipeline.To(s, stage.Discard[int]("x"))
			pipeline.To(s, stage.Discard[int]("y"))
		}, `feeds both "x" and "y"`},
		{"duplicate name", func(p *pipeline.Pipeline) {
			s := pipeline.Then(pipeline.From(p, endless("src")), stage.Map("src", inc))
			pipeline.To(s, stage.Discard[int]("sink"))
		}, `two stages are named "src"`},
		{"foreign port", func(p *pipeline.Pipeline) {
			other := pipeline.New("other")
			pipeline.To(pipeline.From(other, endless("src")), stage.Discard[int]("sink"))
			s := pipeline.From(other, endless("src2"))
			pipeline.To(s, stage.Discard[int]("s2"))
			pipeline.Merge(p, "m", []*pipeline.Port[int]{s})
		}, `port of pipeline "other"`},
		{"empty", func(*pipeline.Pipeline) {}, "no stages"},
		{"empty merge", func(p *pipeline.Pipeline) {
			pipeline.To(pipeline.Merge[int](p, "m", nil), stage.Discard[int]("sink"))
		}, `merge "m" has no inputs`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pipeline.New("bad")
			tc.build(p)
			err := p.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
			if werr := p.Wait(); werr == nil {
				t.Error("Wait after a refused Start returned nil")
			}
		})
	}
}

func TestStreaming(t *testing.T) {
	p := pipeline.New("service")
	in, port := pipeline.Input[string](p, "requests")
	up := pipeline.Then(port, stage.Map("upper", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil }))
	out := pipeline.Output(up, "responses")
	if err := in.Send(context.Background(), stage.Frame[string]{Payload: "early"}); !errors.Is(err, pipeline.ErrNotStarted) {
		t.Fatalf("Send before Start = %v", err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "beta", "gamma", "delta"}
	go func() {
		defer in.Close()
		for i, w := range words {
			if err := in.Send(context.Background(), stage.Frame[string]{Offset: int64(i), Payload: w}); err != nil {
				t.Errorf("Send: %v", err)
				return
			}
		}
	}()
	var got []string
	for f, err := range out.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.Payload)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "ALPHA BETA GAMMA DELTA" {
		t.Errorf("got %q", got)
	}
	if _, err := out.Recv(context.Background()); err != io.EOF {
		t.Errorf("Recv after the end = %v, want io.EOF", err)
	}
	if err := in.Send(context.Background(), stage.Frame[string]{Payload: "late"}); !errors.Is(err, pipeline.ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	m := p.Metrics()
	if m.EndToEnd.Count != int64(len(words)) || m.TimeToFirstOutput() <= 0 {
		t.Errorf("outlet metrics: %+v, ttfo %v", m.EndToEnd, m.TimeToFirstOutput())
	}
}

func TestStreamingFailureReachesCaller(t *testing.T) {
	boom := errors.New("bad request")
	p := pipeline.New("service")
	in, port := pipeline.Input[int](p, "requests")
	x := pipeline.Then(port, stage.Map("check", func(_ context.Context, v int) (int, error) {
		if v < 0 {
			return 0, boom
		}
		return v, nil
	}))
	out := pipeline.Output(x, "responses")
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := in.Send(ctx, stage.Frame[int]{Payload: 1}); err != nil {
		t.Fatal(err)
	}
	if f, err := out.Recv(ctx); err != nil || f.Payload != 1 {
		t.Fatalf("Recv = %v, %v", f, err)
	}
	if err := in.Send(ctx, stage.Frame[int]{Payload: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Recv(ctx); !errors.Is(err, boom) {
		t.Fatalf("Recv after failure = %v, want boom", err)
	}
	// The pipeline is dead: sends fail with its error instead of blocking.
	for i := 0; i < 10; i++ {
		if err := in.Send(ctx, stage.Frame[int]{Payload: i}); err != nil {
			if !errors.Is(err, boom) {
				t.Fatalf("Send after failure = %v, want boom", err)
			}
			break
		}
	}
	in.Close()
	if err := p.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want boom", err)
	}
}

func TestRecvHonoursCallerContext(t *testing.T) {
	p := pipeline.New("service")
	in, port := pipeline.Input[int](p, "in")
	out := pipeline.Output(pipeline.Then(port, stage.Map("id", inc)), "out")
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := out.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv with nothing sent = %v, want deadline exceeded", err)
	}
	in.Close()
	if _, err := out.Recv(context.Background()); err != io.EOF {
		t.Fatalf("Recv after Close = %v, want io.EOF", err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// The time to first output of a chain is at least the first frame's work in
// its slowest stage; with generous upper bounds this cannot flake.
func TestTimeToFirstOutput(t *testing.T) {
	const delay = 20 * time.Millisecond
	p := pipeline.New("ttfo")
	x := pipeline.Then(pipeline.From(p, stage.FromSlice("src", []int{1, 2, 3})), stage.Map("slow", func(_ context.Context, v int) (int, error) {
		time.Sleep(delay)
		return v, nil
	}))
	pipeline.To(x, stage.Discard[int]("sink"))
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := p.Metrics()
	if got := m.TimeToFirstOutput(); got < delay || got > delay+5*time.Second {
		t.Errorf("time to first output %v, want at least %v", got, delay)
	}
	slow, _ := m.Stage("slow")
	if slow.Busy < 3*delay || slow.Latency.P50 < delay || slow.Latency.Max < delay {
		t.Errorf("slow stage metrics too small: busy %v latency %+v", slow.Busy, slow.Latency)
	}
	if m.EndToEnd.Max < delay || m.Wall < 3*delay {
		t.Errorf("end-to-end %+v wall %v below the work done", m.EndToEnd, m.Wall)
	}
}

func TestRunWithCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := pipeline.New("dead")
	pipeline.To(pipeline.Then(pipeline.From(p, endless("src")), stage.Map("a", inc)), stage.Discard[int]("sink"))
	if err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}
