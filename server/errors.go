package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/speech/say"
)

// errBadInput marks an error caused by the request's content.
var errBadInput = errors.New("invalid input")

// apiError is an error answered in OpenAI's shape:
// {"error":{"message","type","param","code"}}. The official clients read
// message and code from it.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// retryAfter, when positive, is sent as Retry-After (seconds).
	retryAfter int
}

func (e *apiError) Error() string { return e.Message }

// badRequest is a 400 about param (empty for the request as a whole).
func badRequest(param, code, format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, "invalid_request_error", param, code, fmt.Sprintf(format, args...))
}

func newAPIError(status int, typ, param, code, msg string) *apiError {
	e := &apiError{status: status, Message: msg, Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}

// writeError answers e as JSON. Nothing must have been written yet.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e}) // the client may be gone; nothing else to tell it
}

// classify maps the error of a model call to the API error the client
// gets: its own mistakes (bad audio, unknown voice) are 400s naming what
// was wrong, the request's deadline 504, anything else a 500 whose message
// hides internals.
func classify(ctx context.Context, err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, audio.ErrTruncated):
		return badRequest("file", "truncated_audio", "the audio file is truncated: %v", err)
	case errors.Is(err, audio.ErrNotWAV), errors.Is(err, audio.ErrUnsupportedCodec), errors.Is(err, audio.ErrUnknownFormat):
		return badRequest("file", "unsupported_audio", "the file is not audio in a supported format (WAV, FLAC, MP3, Ogg/Vorbis): %v", err)
	case errors.Is(err, listen.ErrEmptyAudio):
		return badRequest("file", "empty_audio", "the audio holds no samples: %v", err)
	case errors.Is(err, say.ErrUnknownVoice), errors.Is(err, say.ErrBadVoiceSpec):
		return badRequest("voice", "invalid_voice", "%v", err)
	case errors.Is(err, listen.ErrUnknownLanguage):
		return badRequest("language", "invalid_language", "%v", err)
	case errors.Is(err, say.ErrInvalidUTF8):
		return badRequest("input", "invalid_utf8", "%v", err)
	case errors.Is(err, say.ErrNoSpeech):
		return badRequest("input", "no_speech", "the input holds nothing to say: %v", err)
	case isAudioError(err), errors.Is(err, errBadInput), errors.Is(err, listen.ErrBadOptions),
		errors.Is(err, say.ErrBadOptions), errors.Is(err, say.ErrLang):
		return badRequest("", "invalid_input", "%v", err)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return newAPIError(http.StatusGatewayTimeout, "timeout_error", "", "timeout", "the request took longer than the server's time limit")
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// 499 as nginx logs it: the client went away, nobody reads this.
		return newAPIError(499, "client_closed_request", "", "canceled", "the request was cancelled")
	}
	return newAPIError(http.StatusInternalServerError, "server_error", "", "internal_error", "the server failed to process the request")
}

// isAudioError reports a malformed audio file.
func isAudioError(err error) bool {
	for _, e := range []error{audio.ErrCorrupt, audio.ErrNoChannels, audio.ErrTooLarge, audio.ErrSampleRate,
		audio.ErrBadHeader, audio.ErrBadFormat, audio.ErrNotFinite} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
