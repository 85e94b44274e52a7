package fetch

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Progress draws one status line for downloads, unpacking, verification and
// conversion: bytes done, percent and rate. It draws only when its writer is
// a terminal; a nil or quiet Progress accepts every call and prints nothing,
// so logs and CI output stay clean.
type Progress struct {
	w  io.Writer
	mu sync.Mutex
}

// NewProgress returns a Progress drawing on f when f is a terminal, and a
// quiet one otherwise.
func NewProgress(f *os.File) *Progress {
	if f == nil || !IsTerminal(f) {
		return nil
	}
	return &Progress{w: f}
}

// IsTerminal reports whether f is a character device (a terminal) and TERM
// does not say "dumb".
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

func (p *Progress) draw(line string, final bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s%s", line, end)
}

// Bar tracks one transfer of total bytes (0 if unknown).
type Bar struct {
	p        *Progress
	label    string
	total    int64
	done     int64
	start    time.Time
	lastDraw time.Time
}

// Bar starts a progress line for label.
func (p *Progress) Bar(label string, total int64) *Bar {
	if p == nil {
		return nil
	}
	return &Bar{p: p, label: label, total: total, start: time.Now()}
}

// Add records n more bytes and redraws at most ten times a second.
func (b *Bar) Add(n int64) {
	if b == nil {
		return
	}
	b.done += n
	if now := time.Now(); now.Sub(b.lastDraw) >= 100*time.Millisecond {
		b.lastDraw = now
		b.p.draw(b.line(), false)
	}
}

// Done draws the final state of the line and moves to the next one.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.p.draw(b.line(), true)
}

func (b *Bar) line() string {
	secs := time.Since(b.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(b.done) / secs
	}
	if b.total > 0 {
		return fmt.Sprintf("%s  %s / %s  %3.0f%%  %s/s", b.label, humanBytes(b.done), humanBytes(b.total),
			100*float64(b.done)/float64(b.total), humanBytes(int64(rate)))
	}
	return fmt.Sprintf("%s  %s  %s/s", b.label, humanBytes(b.done), humanBytes(int64(rate)))
}

// Wait shows label with a running clock until the returned func is called,
// for steps (such as npm pack) whose byte count cannot be observed.
func (p *Progress) Wait(label string) (done func()) {
	if p == nil {
		return func() {}
	}
	start := time.Now()
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.draw(fmt.Sprintf("%s  %.1f s", label, time.Since(start).Seconds()), false)
			}
		}
	}()
	return func() {
		close(stop)
		<-finished
		p.draw(fmt.Sprintf("%s  %.1f s", label, time.Since(start).Seconds()), true)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
