package stage

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
)

// Error is a failure of one named stage. Pipelines return the first one;
// use errors.As to learn which stage failed.
type Error struct {
	Stage string
	Err   error
}

// Error implements error.
func (e *Error) Error() string { return "stage " + strconv.Quote(e.Stage) + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// PanicError is what a stage returns when its function panicked: a panic in
// one model must fail its pipeline, not take down the process serving it.
type PanicError struct {
	Value any
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// wrap names err by the stage that returned it, once.
func wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) && se.Stage == name {
		return err
	}
	return &Error{Stage: name, Err: err}
}

// guard turns a panic in a stage body into an error named by the stage. It
// must be deferred directly.
func guard(name string, err *error) {
	if r := recover(); r != nil {
		*err = &Error{Stage: name, Err: &PanicError{Value: r, Stack: debug.Stack()}}
	}
}
