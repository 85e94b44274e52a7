package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/speech/say"
)

// speechRequest is the JSON body of /v1/audio/speech (OpenAI's fields;
// others, such as instructions, are ignored).
type speechRequest struct {
	Model          string   `json:"model"`
	Input          string   `json:"input"`
	Voice          string   `json:"voice"`
	Speed          *float64 `json:"speed"`
	ResponseFormat string   `json:"response_format"`
}

// openAIVoices maps OpenAI's voice names to the Kokoro voices of the same
// name, so that clients written for OpenAI work unchanged.
var openAIVoices = map[string]string{
	"alloy": "af_alloy", "echo": "am_echo", "fable": "bm_fable",
	"onyx": "am_onyx", "nova": "af_nova", "shimmer": "af_bella",
}

// speech serves /v1/audio/speech: the audio is streamed with chunked
// transfer, each block as soon as the synthesizer yields it.
func (s *Server) speech(w http.ResponseWriter, r *http.Request) {
	ctx, end, ok := s.begin(r)
	if !ok {
		unavailable(w)
		return
	}
	defer end()
	req, m, opts, aerr := s.parseSpeech(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	release := s.admit(ctx, w, m.id)
	if release == nil {
		return
	}
	defer release()
	syn, err := m.get(ctx, s.base)
	if err != nil {
		writeError(w, s.failed(ctx, m.id, err))
		return
	}

	started := time.Now()
	rc := http.NewResponseController(w)
	var wav *audio.Writer
	var pcmBuf []byte
	var samples int64
	emit := func(a say.Audio) error {
		if samples == 0 {
			s.met.ttfa.WithLabelValues(endpointOf(r), m.id).Observe(time.Since(started).Seconds())
			h := w.Header()
			h.Set("X-Sample-Rate", strconv.Itoa(a.Rate))
			if req.ResponseFormat == "pcm" {
				h.Set("Content-Type", "audio/pcm")
			} else {
				h.Set("Content-Type", "audio/wav")
				var err error
				if wav, err = audio.NewWAVWriter(w, audio.S16Mono(a.Rate)); err != nil {
					return err
				}
			}
		}
		samples += int64(len(a.Samples))
		if wav != nil {
			if err := wav.Write(a.Samples); err != nil {
				return err
			}
		} else {
			pcmBuf = s16le(pcmBuf[:0], a.Samples)
			if _, err := w.Write(pcmBuf); err != nil {
				return err
			}
		}
		return rc.Flush()
	}
	res, err := syn.Synthesize(ctx, say.String(req.Input), opts, emit)
	if err != nil {
		e := s.failed(ctx, m.id, err)
		if samples == 0 {
			writeError(w, e)
			return
		}
		// The 200 and some audio have left: ending the stream normally would
		// pass a cut-short file off as whole. Dropping the connection is
		// net/http's way to tell the client the body is incomplete.
		panic(http.ErrAbortHandler)
	}
	if samples == 0 {
		writeError(w, badRequest("input", "no_speech", "the input holds nothing to say"))
		return
	}
	if sec := res.Seconds(); sec > 0 {
		s.met.rtf.WithLabelValues(endpointOf(r), m.id).Observe(time.Since(started).Seconds() / sec)
		s.met.audioSecs.WithLabelValues(endpointOf(r), m.id).Add(sec)
	}
}

// parseSpeech reads and checks the JSON body.
func (s *Server) parseSpeech(w http.ResponseWriter, r *http.Request) (*speechRequest, *lazy[Synthesizer], say.Options, *apiError) {
	var opts say.Options
	// Every character may take 4 bytes of UTF-8, or 12 as a JSON escape.
	limit := int64(12*s.cfg.MaxInputChars) + 4096
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, nil, opts, newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "input", "request_too_large",
				fmt.Sprintf("the request body is larger than %d bytes", limit))
		}
		return nil, nil, opts, classify(r.Context(), fmt.Errorf("reading the request body: %w", err))
	}
	if !utf8.Valid(body) {
		return nil, nil, opts, badRequest("input", "invalid_utf8", "the request body is not valid UTF-8")
	}
	var req speechRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, opts, badRequest("", "invalid_json", "the request body is not the expected JSON object: %v", err)
	}
	if strings.ContainsRune(req.Input, utf8.RuneError) && !bytes.ContainsRune(body, utf8.RuneError) {
		// A lone surrogate escape (\ud800) decodes to U+FFFD: not text.
		return nil, nil, opts, badRequest("input", "invalid_utf8", "input holds an invalid Unicode escape")
	}
	if strings.TrimSpace(req.Input) == "" {
		return nil, nil, opts, badRequest("input", "missing_input", "input is empty: give the text to speak")
	}
	if n := utf8.RuneCountInString(req.Input); n > s.cfg.MaxInputChars {
		return nil, nil, opts, badRequest("input", "input_too_long", "input has %d characters; the limit is %d", n, s.cfg.MaxInputChars)
	}
	switch req.ResponseFormat {
	case "":
		req.ResponseFormat = "wav"
	case "wav", "pcm":
	default:
		return nil, nil, opts, badRequest("response_format", "unsupported_response_format",
			"response_format %q is not served: want wav or pcm (16-bit mono, rate in X-Sample-Rate)", req.ResponseFormat)
	}
	opts.Speed = 1
	if req.Speed != nil {
		opts.Speed = *req.Speed
		if !(opts.Speed >= 0.25 && opts.Speed <= 4) {
			return nil, nil, opts, badRequest("speed", "invalid_speed", "speed %v: want 0.25 to 4", opts.Speed)
		}
	}
	opts.Voice = strings.TrimSpace(req.Voice)
	if v, ok := openAIVoices[opts.Voice]; ok {
		opts.Voice = v
	}
	if opts.Voice == "" {
		return nil, nil, opts, badRequest("voice", "missing_voice", "voice is missing: name a voice (af_heart) or a mix (af_heart,am_michael:0.5)")
	}
	m, ok := resolve(s.tts, req.Model, "tts-1", "tts-1-hd", "gpt-4o-mini-tts")
	if !ok {
		return nil, nil, opts, badRequest("model", "model_not_found", "model %q is not served here; try one of %s (or tts-1)", req.Model, strings.Join(ids(s.tts), ", "))
	}
	return &req, m, opts, nil
}

// s16le appends pcm as 16-bit little-endian samples, clipped.
func s16le(dst []byte, pcm []float32) []byte {
	for _, x := range pcm {
		v := math.Round(float64(x) * 32767)
		v = max(-32768, min(32767, v))
		if math.IsNaN(v) {
			v = 0
		}
		dst = binary.LittleEndian.AppendUint16(dst, uint16(int16(v)))
	}
	return dst
}
