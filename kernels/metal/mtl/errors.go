package mtl

import (
	"errors"
	"fmt"
)

// Error is an NSError that a Metal call returned, as Go sees it: what
// failed (Op), the error's domain and code, its localized description and
// failure reason (a compile error's log is in the description).
type Error struct {
	Op          string
	Domain      string
	Code        int
	Description string
	Reason      string
}

// Error says what failed and why, naming the code where the domain is one
// of Metal's.
func (e *Error) Error() string {
	s := "metal: " + e.Op + ": "
	if name := codeName(e.Domain, e.Code); name != "" {
		s += name
	} else {
		s += fmt.Sprintf("%s error %d", e.Domain, e.Code)
	}
	if e.Description != "" {
		s += ": " + e.Description
	}
	if e.Reason != "" && e.Reason != e.Description {
		s += " (" + e.Reason + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrOutOfMemory) and errors.Is(err, ErrCompile)
// work on decoded errors.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrOutOfMemory:
		return e.Domain == commandBufferDomain && e.Code == 7
	case ErrCompile:
		return e.Domain == libraryDomain && (e.Code == 3 || e.Code == 1)
	}
	return false
}

// Sentinels that decoded errors match with errors.Is.
var (
	// ErrOutOfMemory: the GPU ran out of memory running a command buffer.
	ErrOutOfMemory = errors.New("metal: out of memory")
	// ErrCompile: Metal's compiler rejected a library's source.
	ErrCompile = errors.New("metal: shader compilation failed")
	// ErrNil: a call that returns an object returned nil without an
	// NSError (the framework's way of saying "not supported here").
	ErrNil = errors.New("metal: nil object")
)

const (
	libraryDomain       = "MTLLibraryErrorDomain"
	commandBufferDomain = "MTLCommandBufferErrorDomain"
)

// codeName names the codes of Metal's error domains (MTLLibraryError,
// MTLCommandBufferError); "" for others.
func codeName(domain string, code int) string {
	var names map[int]string
	switch domain {
	case libraryDomain:
		names = map[int]string{1: "unsupported", 2: "internal error", 3: "compile failure", 4: "compile warning",
			5: "function not found", 6: "file not found"}
	case commandBufferDomain:
		names = map[int]string{0: "no error", 1: "internal error", 2: "timeout", 3: "page fault",
			4: "access revoked", 5: "not permitted", 7: "out of memory", 8: "invalid resource",
			9: "memoryless", 10: "device removed", 11: "stack overflow"}
	default:
		return ""
	}
	return names[code]
}

// libraryResult decides what newLibraryWithSource:options:error: meant:
// a library with an NSError is a compile with warnings (success); no
// library is a failure, described by the NSError when there is one.
func libraryResult(gotLibrary bool, nsErr *Error) error {
	if gotLibrary {
		return nil
	}
	if nsErr != nil {
		return nsErr
	}
	return fmt.Errorf("metal: compiling a library: %w", ErrNil)
}

// Command buffer states (MTLCommandBufferStatus).
const (
	statusNotEnqueued = 0
	statusEnqueued    = 1
	statusCommitted   = 2
	statusScheduled   = 3
	statusCompleted   = 4
	statusError       = 5
)

// statusResult turns a finished command buffer's status (and its error,
// when it has one) into a Go error: nil for completed, the NSError (or a
// description of the status) otherwise.
func statusResult(status int, nsErr *Error) error {
	switch status {
	case statusCompleted:
		return nil
	case statusError:
		if nsErr != nil {
			return nsErr
		}
		return errors.New("metal: command buffer failed without an error object")
	}
	names := map[int]string{statusNotEnqueued: "not enqueued", statusEnqueued: "enqueued", statusCommitted: "committed", statusScheduled: "scheduled"}
	if n, ok := names[status]; ok {
		return fmt.Errorf("metal: command buffer still %s after waiting for it", n)
	}
	return fmt.Errorf("metal: command buffer has unknown status %d", status)
}
