package driver

import (
	"fmt"
	"strconv"
)

// Result is a CUresult, the status every driver API call returns.
//
// A Result is itself an error, so that errors.Is(err, driver.ErrorNotReady)
// matches an *Error carrying that code.
type Result int32

// CUresult values used by this package and its callers. Values from cuda.h
// (enum cudaError_enum; CUDA 11.8 header, the same in the CUDA 13.0 bindings
// of cudarc v0.18.1).
const (
	Success                       Result = 0   // CUDA_SUCCESS
	ErrorInvalidValue             Result = 1   // CUDA_ERROR_INVALID_VALUE
	ErrorOutOfMemory              Result = 2   // CUDA_ERROR_OUT_OF_MEMORY
	ErrorNotInitialized           Result = 3   // CUDA_ERROR_NOT_INITIALIZED
	ErrorDeinitialized            Result = 4   // CUDA_ERROR_DEINITIALIZED
	ErrorStubLibrary              Result = 34  // CUDA_ERROR_STUB_LIBRARY
	ErrorNoDevice                 Result = 100 // CUDA_ERROR_NO_DEVICE
	ErrorInvalidDevice            Result = 101 // CUDA_ERROR_INVALID_DEVICE
	ErrorInvalidImage             Result = 200 // CUDA_ERROR_INVALID_IMAGE
	ErrorInvalidContext           Result = 201 // CUDA_ERROR_INVALID_CONTEXT
	ErrorNoBinaryForGPU           Result = 209 // CUDA_ERROR_NO_BINARY_FOR_GPU
	ErrorInvalidPTX               Result = 218 // CUDA_ERROR_INVALID_PTX
	ErrorUnsupportedPTXVersion    Result = 222 // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
	ErrorInvalidHandle            Result = 400 // CUDA_ERROR_INVALID_HANDLE
	ErrorNotFound                 Result = 500 // CUDA_ERROR_NOT_FOUND
	ErrorNotReady                 Result = 600 // CUDA_ERROR_NOT_READY
	ErrorIllegalAddress           Result = 700 // CUDA_ERROR_ILLEGAL_ADDRESS
	ErrorLaunchOutOfResources     Result = 701 // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
	ErrorLaunchFailed             Result = 719 // CUDA_ERROR_LAUNCH_FAILED
	ErrorNotSupported             Result = 801 // CUDA_ERROR_NOT_SUPPORTED
	ErrorStreamCaptureUnsupported Result = 900 // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	ErrorStreamCaptureInvalidated Result = 901 // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
	ErrorStreamCaptureWrongThread Result = 908 // CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD
	ErrorUnknown                  Result = 999 // CUDA_ERROR_UNKNOWN
)

// resultNames names the codes above, for errors formatted without a loaded
// driver (cuGetErrorName is used whenever one is loaded).
var resultNames = map[Result]string{
	Success:                       "CUDA_SUCCESS",
	ErrorInvalidValue:             "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory:              "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized:           "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized:            "CUDA_ERROR_DEINITIALIZED",
	ErrorStubLibrary:              "CUDA_ERROR_STUB_LIBRARY",
	ErrorNoDevice:                 "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice:            "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidImage:             "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext:           "CUDA_ERROR_INVALID_CONTEXT",
	ErrorNoBinaryForGPU:           "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorInvalidPTX:               "CUDA_ERROR_INVALID_PTX",
	ErrorUnsupportedPTXVersion:    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	ErrorInvalidHandle:            "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound:                 "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady:                 "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress:           "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfResources:     "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	ErrorLaunchFailed:             "CUDA_ERROR_LAUNCH_FAILED",
	ErrorNotSupported:             "CUDA_ERROR_NOT_SUPPORTED",
	ErrorStreamCaptureUnsupported: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	ErrorStreamCaptureInvalidated: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	ErrorStreamCaptureWrongThread: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	ErrorUnknown:                  "CUDA_ERROR_UNKNOWN",
}

// Name returns the code's cuda.h name from the table above, or
// "CUresult(N)" for a code the table does not hold.
func (r Result) Name() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return "CUresult(" + strconv.Itoa(int(r)) + ")"
}

// Error returns the code's name, so a bare Result reads like cuda.h.
func (r Result) Error() string { return r.Name() }

// Error is a failed driver API call.
type Error struct {
	// Call is the entry point that failed, as exported ("cuMemAlloc_v2").
	Call string
	// Code is what it returned.
	Code Result
	// Name and Msg are cuGetErrorName's and cuGetErrorString's text for
	// Code (Name falls back to this package's table, Msg to empty, where
	// the driver does not know the code or none is loaded).
	Name, Msg string
}

// Error formats as "call: NAME (code): message".
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, int32(e.Code))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Unwrap returns the code, for errors.Is(err, driver.ErrorOutOfMemory).
func (e *Error) Unwrap() error { return e.Code }
