package ctxio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestPassesBytesAndErrors: whatever r gives (short reads, data with
// io.EOF, an error after data) comes through unchanged.
func TestPassesBytesAndErrors(t *testing.T) {
	content := bytes.Repeat([]byte("forge "), 20000) // several pump buffers
	for _, c := range []struct {
		name string
		r    func() io.Reader
	}{
		{"whole", func() io.Reader { return bytes.NewReader(content) }},
		{"one byte", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(content)) }},
		{"half", func() io.Reader { return iotest.HalfReader(bytes.NewReader(content)) }},
		{"data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(content)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := iotest.TestReader(Reader(context.Background(), c.r()), content); err != nil {
				t.Fatal(err)
			}
		})
	}
	boom := errors.New("disk on fire")
	b, err := io.ReadAll(Reader(context.Background(), io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))))
	if string(b) != "abc" || !errors.Is(err, boom) {
		t.Fatalf("read %q, %v; want \"abc\" and the reader's error", b, err)
	}
}

// blockingReader's Read announces itself, then blocks until release.
type blockingReader struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReader) Read([]byte) (int, error) {
	close(b.entered)
	<-b.release
	return 0, io.EOF
}

// TestBlockedReadEnds: a Read whose underlying read is blocked returns the
// context's error once the context ends.
func TestBlockedReadEnds(t *testing.T) {
	br := &blockingReader{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(br.release) // lets the pump's pending read return
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader(ctx, br)
	got := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 16))
		got <- err
	}()
	<-br.entered
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("blocked Read returned %v, want context.Canceled", err)
	}
	if _, err := r.Read(make([]byte, 16)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after the end: %v, want context.Canceled", err)
	}
}
