package driver

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// startTestWorker starts a worker with no CUDA behind it, recording its
// teardown.
func startTestWorker(t *testing.T, teardownErr error) (*worker, *bool) {
	t.Helper()
	tornDown := new(bool)
	w, err := startWorker(func() error { return nil }, func() error { *tornDown = true; return teardownErr })
	if err != nil {
		t.Fatal(err)
	}
	return w, tornDown
}

func TestWorkerRunsInOrderOnOneThread(t *testing.T) {
	w, _ := startTestWorker(t, nil)
	defer w.close()
	const goroutines, calls = 4, 50
	var (
		mu   sync.Mutex
		seen = map[int][]int{} // per submitting goroutine: the sequence run
		tids = map[int]bool{}
		wg   sync.WaitGroup
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				rec := func() error {
					tid, _ := gettid()
					mu.Lock()
					seen[g] = append(seen[g], i)
					tids[tid] = true
					mu.Unlock()
					return nil
				}
				var err error
				if i%2 == 0 {
					err = w.do(rec, nil)
				} else {
					err = w.do(nil, []func() error{rec})
				}
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for g := range goroutines {
		for i, v := range seen[g] {
			if v != i {
				t.Fatalf("goroutine %d: call %d ran as %d: %v", g, i, v, seen[g])
			}
		}
	}
	if len(tids) != 1 || !tids[w.tid] {
		t.Errorf("funcs ran on OS threads %v, want only %d", tids, w.tid)
	}
}

func TestWorkerBatchStopsAtFirstError(t *testing.T) {
	w, _ := startTestWorker(t, nil)
	defer w.close()
	errBoom := errors.New("boom")
	var ran []int
	step := func(i int, err error) func() error {
		return func() error { ran = append(ran, i); return err }
	}
	tests := []struct {
		name    string
		fns     []func() error
		wantErr error
		wantRan string
	}{
		{"all succeed", []func() error{step(1, nil), step(2, nil), step(3, nil)}, nil, "[1 2 3]"},
		{"second fails", []func() error{step(1, nil), step(2, errBoom), step(3, nil)}, errBoom, "[1 2]"},
		{"empty", nil, nil, "[]"},
	}
	for _, tt := range tests {
		ran = []int{}
		err := w.do(nil, tt.fns)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.wantErr)
		}
		if got := fmt.Sprint(ran); got != tt.wantRan {
			t.Errorf("%s: ran %s, want %s", tt.name, got, tt.wantRan)
		}
	}
}

func TestWorkerNestedCallsRunInline(t *testing.T) {
	w, _ := startTestWorker(t, nil)
	defer w.close()
	var order []string
	err := w.do(func() error {
		order = append(order, "outer")
		if err := w.do(func() error { order = append(order, "inner"); return nil }, nil); err != nil {
			return err
		}
		if err := w.close(); err == nil {
			return errors.New("Close from the thread itself succeeded")
		}
		return w.do(nil, []func() error{func() error { order = append(order, "batch"); return nil }})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "outer inner batch" {
		t.Errorf("order %q", got)
	}
}

func TestWorkerPanicReachesCaller(t *testing.T) {
	w, _ := startTestWorker(t, nil)
	defer w.close()
	got := func() (r any) {
		defer func() { r = recover() }()
		_ = w.do(func() error { panic("bad kernel table") }, nil)
		return nil
	}()
	if s, _ := got.(string); !strings.Contains(s, "bad kernel table") || !strings.Contains(s, "CUDA thread") {
		t.Errorf("recovered %v", got)
	}
	// The thread survives the panic.
	if err := w.do(func() error { return nil }, nil); err != nil {
		t.Errorf("after a panic: %v", err)
	}
}

func TestWorkerClose(t *testing.T) {
	errTeardown := errors.New("release failed")
	w, tornDown := startTestWorker(t, errTeardown)
	ran := false
	if err := w.do(func() error { ran = true; return nil }, nil); err != nil || !ran {
		t.Fatalf("before Close: ran %v, err %v", ran, err)
	}
	if err := w.close(); !errors.Is(err, errTeardown) {
		t.Errorf("Close = %v, want the teardown's error", err)
	}
	if !*tornDown {
		t.Error("teardown did not run")
	}
	if err := w.close(); !errors.Is(err, errTeardown) {
		t.Errorf("second Close = %v, want the first one's result", err)
	}
	if err := w.do(func() error { t.Error("ran after Close"); return nil }, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
}

func TestWorkerSetupFailure(t *testing.T) {
	errSetup := errors.New("no context")
	w, err := startWorker(func() error { return errSetup }, func() error { t.Error("teardown after failed setup"); return nil })
	if !errors.Is(err, errSetup) || w != nil {
		t.Errorf("startWorker = %v, %v; want nil, the setup error", w, err)
	}
}

// BenchmarkThreadHop measures one Do round trip to the locked thread, and a
// batch of 16 funcs in one DoAll hop.
func BenchmarkThreadHop(b *testing.B) {
	w, err := startWorker(func() error { return nil }, func() error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	defer w.close()
	nop := func() error { return nil }
	b.Run("do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = w.do(nop, nil)
		}
	})
	batch := make([]func() error, 16)
	for i := range batch {
		batch[i] = nop
	}
	b.Run("batch16", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = w.do(nil, batch)
		}
	})
}
