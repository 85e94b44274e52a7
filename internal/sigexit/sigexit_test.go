package sigexit

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestSignalCancels: each signal, sent to this process, cancels the
// context with an Interrupt that gives the shell's status and still reads
// as a cancellation.
func TestSignalCancels(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		msg  string
	}{
		{syscall.SIGINT, 130, "interrupted by SIGINT"},
		{syscall.SIGTERM, 143, "interrupted by SIGTERM"},
	} {
		t.Run(c.msg, func(t *testing.T) {
			ctx, stop := Context(context.Background())
			defer stop()
			if err := syscall.Kill(syscall.Getpid(), c.sig); err != nil {
				t.Fatal(err)
			}
			<-ctx.Done() // the test's deadline bounds this wait if the signal is lost
			in, ok := Cause(ctx)
			if !ok {
				t.Fatalf("cause %v, want an *Interrupt", context.Cause(ctx))
			}
			if in.ExitCode() != c.code || in.Error() != c.msg {
				t.Errorf("exit code %d, message %q; want %d, %q", in.ExitCode(), in.Error(), c.code, c.msg)
			}
			if !errors.Is(context.Cause(ctx), context.Canceled) {
				t.Errorf("an Interrupt should match context.Canceled")
			}
		})
	}
}

// TestStopIsNoSignal: a context released by stop, or ended by its parent,
// was not interrupted.
func TestStopIsNoSignal(t *testing.T) {
	ctx, stop := Context(context.Background())
	stop()
	stop() // idempotent
	if ctx.Err() == nil {
		t.Fatal("stop left the context running")
	}
	if in, ok := Cause(ctx); ok {
		t.Errorf("Cause = %v after stop, want none", in)
	}

	parent, cancel := context.WithCancel(context.Background())
	ctx, stop = Context(parent)
	defer stop()
	cancel()
	<-ctx.Done()
	if in, ok := Cause(ctx); ok {
		t.Errorf("Cause = %v after the parent ended, want none", in)
	}
}
