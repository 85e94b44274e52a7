package frame

import (
	"errors"
	"math/rand/v2"
	"testing"
)

type collected struct {
	frames  [][]float32
	offsets []int64
}

func (c *collected) emit(frame []float32, off int64) error {
	c.frames = append(c.frames, append([]float32(nil), frame...))
	c.offsets = append(c.offsets, off)
	return nil
}

func TestFramesFromRandomChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ size, hop, total int }{
		{512, 512, 16000}, {512, 512, 512 * 7}, {4, 4, 3}, {400, 160, 5000}, {10, 1, 57}, {3, 2, 100},
	} {
		stream := make([]float32, tc.total)
		for i := range stream {
			stream[i] = float32(i + 1)
		}
		f, err := NewHop(tc.size, tc.hop)
		if err != nil {
			t.Fatal(err)
		}
		var c collected
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), rng.IntN(3*tc.size)+0)
			if err := f.Push(rest[:n], c.emit); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		realN, err := f.Flush(c.emit)
		if err != nil {
			t.Fatal(err)
		}
		// Expected: frames at k·hop while they fit, then one zero-padded
		// frame if samples remain uncovered.
		var want collected
		covered := 0
		for start := 0; start+tc.size <= tc.total; start += tc.hop {
			want.emit(stream[start:start+tc.size], int64(start))
			covered = start + tc.size
		}
		wantReal := 0
		if covered < tc.total {
			start := len(want.frames) * tc.hop
			last := make([]float32, tc.size)
			wantReal = copy(last, stream[start:])
			want.emit(last, int64(start))
		}
		if realN != wantReal {
			t.Errorf("size %d hop %d: Flush reported %d real samples, want %d", tc.size, tc.hop, realN, wantReal)
		}
		if len(c.frames) != len(want.frames) {
			t.Fatalf("size %d hop %d total %d: %d frames, want %d", tc.size, tc.hop, tc.total, len(c.frames), len(want.frames))
		}
		for k := range want.frames {
			if c.offsets[k] != want.offsets[k] {
				t.Fatalf("frame %d offset %d, want %d", k, c.offsets[k], want.offsets[k])
			}
			for i := range want.frames[k] {
				if c.frames[k][i] != want.frames[k][i] {
					t.Fatalf("size %d hop %d: frame %d sample %d = %v, want %v", tc.size, tc.hop, k, i, c.frames[k][i], want.frames[k][i])
				}
			}
		}
	}
}

func TestFlushEmptyAndReuse(t *testing.T) {
	f, _ := New(4)
	var c collected
	if n, err := f.Flush(c.emit); n != 0 || err != nil || len(c.frames) != 0 {
		t.Fatalf("flush of nothing: %d, %v, %d frames", n, err, len(c.frames))
	}
	f.Push([]float32{1, 2, 3, 4}, c.emit)
	if n, _ := f.Flush(c.emit); n != 0 || len(c.frames) != 1 {
		t.Fatalf("flush after an exact frame emitted %d frames (real %d), want 1 total", len(c.frames), n)
	}
	f.Push([]float32{9}, c.emit)
	if n, _ := f.Flush(c.emit); n != 1 || c.offsets[1] != 0 || c.frames[1][0] != 9 || c.frames[1][1] != 0 {
		t.Fatalf("new stream after flush: real %d, frame %v at %d", n, c.frames[1], c.offsets[1])
	}
}

func TestEmitError(t *testing.T) {
	f, _ := New(2)
	stop := errors.New("stop")
	calls := 0
	err := f.Push([]float32{1, 2, 3, 4, 5, 6}, func([]float32, int64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls, want stop after 1", err, calls)
	}
}

func TestBadSizes(t *testing.T) {
	for _, tc := range [][2]int{{0, 0}, {4, 0}, {4, 5}, {-1, 1}} {
		if _, err := NewHop(tc[0], tc[1]); !errors.Is(err, ErrSize) {
			t.Errorf("NewHop(%d, %d): err = %v, want ErrSize", tc[0], tc[1], err)
		}
	}
}

func TestSteadyStateAllocs(t *testing.T) {
	for _, hop := range []int{512, 256} {
		f, _ := NewHop(512, hop)
		chunk := make([]float32, 300)
		var sum float32
		emit := func(frame []float32, _ int64) error { sum += frame[0]; return nil }
		if a := testing.AllocsPerRun(100, func() { f.Push(chunk, emit) }); a != 0 {
			t.Errorf("hop %d: %v allocations per Push", hop, a)
		}
	}
}

func BenchmarkPush480(b *testing.B) {
	f, _ := New(512)
	chunk := make([]float32, 480) // 30 ms at 16 kHz, as a microphone delivers
	emit := func([]float32, int64) error { return nil }
	for range b.N {
		f.Push(chunk, emit)
	}
}
