// Package ctxio makes a blocking reader give way to a context: a Read that
// is waiting on a terminal or a pipe whose writer sends nothing (say's
// text on standard input, listen's audio from "-") returns as soon as the
// context ends, so a command stopped by a signal is not held up by input
// that may never come. Standard input cannot be given a deadline (the
// runtime's poller does not manage a blocking descriptor), so the reads run
// in a goroutine of their own.
package ctxio

import (
	"context"
	"io"
)

// bufSize is the size of each read from the underlying reader.
const bufSize = 32 << 10

// Reader returns a reader of r's bytes whose Read returns ctx's error once
// ctx is done, even while r's Read blocks. Reads of r happen one at a time
// in a goroutine that starts with the first Read; when ctx ends it stays
// blocked until r's pending Read returns, then drops what that read and
// exits. The returned reader is not safe for concurrent use.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	return &reader{ctx: ctx, r: r}
}

type reader struct {
	ctx     context.Context
	r       io.Reader
	started bool
	data    chan chunk  // filled buffers, in order
	free    chan []byte // buffers to fill
	cur     chunk       // what is left of the chunk being consumed
	err     error       // sticky: r's error (io.EOF at the end)
}

// chunk is one read of r: its bytes and its error.
type chunk struct {
	b   []byte
	buf []byte // the whole buffer, returned to free when b is consumed
	err error
}

func (c *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(c.cur.b) == 0 {
		if c.cur.buf != nil {
			c.free <- c.cur.buf // the pump holds at most the other buffer
			c.cur.buf = nil
		}
		if c.err != nil {
			return 0, c.err
		}
		if err := c.ctx.Err(); err != nil {
			return 0, err
		}
		if !c.started {
			c.start()
		}
		select {
		case ch := <-c.data:
			c.cur, c.err = ch, ch.err
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		}
	}
	n := copy(p, c.cur.b)
	c.cur.b = c.cur.b[n:]
	return n, nil
}

// start runs the pump: two buffers, so one read of r overlaps the
// consumer's copying out of the other.
func (c *reader) start() {
	c.started = true
	c.data = make(chan chunk)
	c.free = make(chan []byte, 2)
	c.free <- make([]byte, bufSize)
	c.free <- make([]byte, bufSize)
	go func() {
		for {
			var buf []byte
			select {
			case buf = <-c.free:
			case <-c.ctx.Done():
				return
			}
			n, err := c.r.Read(buf)
			select {
			case c.data <- chunk{b: buf[:n], buf: buf, err: err}:
			case <-c.ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
}
