// Package sigexit stops a command on SIGINT or SIGTERM and gives it the
// exit status shells expect of a process a signal stopped: 128 plus the
// signal's number (130 for SIGINT, 143 for SIGTERM), not the 1 of a failed
// run, so that scripts and service managers can tell the two apart.
//
// The first signal cancels the context that Context returns, with an
// *Interrupt as its cause, so that the command's pipeline stops and the
// command leaves its output in order (a finished file or none, never a
// half-written one) before it exits. The handler is removed as it fires:
// a second signal has its default action and ends a command that is slow
// to stop at once.
package sigexit

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupt is the cause of a context that a signal ended. It matches
// context.Canceled under errors.Is, so code that treats cancellation as
// "stop quietly" keeps doing so.
type Interrupt struct {
	Signal os.Signal
}

// Error names the signal.
func (i *Interrupt) Error() string {
	switch i.Signal {
	case syscall.SIGINT:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by signal " + i.Signal.String()
}

// Is reports whether target is context.Canceled.
func (i *Interrupt) Is(target error) bool { return target == context.Canceled }

// ExitCode returns 128 plus the signal's number, the status a shell
// reports for a process ended by that signal.
func (i *Interrupt) ExitCode() int {
	if s, ok := i.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// Context returns a copy of parent that the first SIGINT or SIGTERM
// cancels, with an *Interrupt as its cause. stop releases the signals (and
// cancels the context); call it when the command is done.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs) // a second signal ends the process
			cancel(&Interrupt{Signal: s})
		case <-stopped:
		case <-ctx.Done():
			signal.Stop(sigs)
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(stopped)
			cancel(context.Canceled)
		})
	}
}

// Cause returns the Interrupt that ended ctx, if a signal did.
func Cause(ctx context.Context) (*Interrupt, bool) {
	var in *Interrupt
	if errors.As(context.Cause(ctx), &in) {
		return in, true
	}
	return nil, false
}
