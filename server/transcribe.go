package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/transcript"
)

// multipartOverhead is what a transcription body may hold beyond the file:
// the other fields and the part headers.
const multipartOverhead = 1 << 20

// formMemory is how much of a multipart body is held in memory; the rest
// of a large file spills to a temporary file that net/http removes.
const formMemory = 8 << 20

// transcribeRequest is a parsed transcription or translation request.
type transcribeRequest struct {
	file   multipart.File
	model  *lazy[Transcriber]
	opts   listen.Options
	format transcript.Format
	stream bool
}

// transcribe serves /v1/audio/transcriptions (translate false) and
// /v1/audio/translations.
func (s *Server) transcribe(translate bool) http.HandlerFunc {
	task := "transcribe"
	if translate {
		task = "translate"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, end, ok := s.begin(r)
		if !ok {
			unavailable(w)
			return
		}
		defer end()
		req, aerr := s.parseTranscribe(w, r, translate)
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		defer req.file.Close()
		// The header is checked before the request queues, so that a file
		// that is not audio fails at once; it is decoded once admitted.
		if _, err := audio.Open(req.file); err != nil {
			writeError(w, classify(ctx, err))
			return
		}
		if _, err := req.file.Seek(0, io.SeekStart); err != nil {
			writeError(w, classify(ctx, fmt.Errorf("rewinding the upload: %w", err)))
			return
		}
		id := req.model.id
		release := s.admit(ctx, w, id)
		if release == nil {
			return
		}
		defer release()
		m, err := req.model.get(ctx, s.base)
		if err != nil {
			writeError(w, s.failed(ctx, id, err))
			return
		}
		clip, err := audio.Decode(req.file)
		if err != nil {
			writeError(w, classify(ctx, err))
			return
		}
		in, err := listen.PCM(clip)
		if err != nil {
			writeError(w, classify(ctx, err))
			return
		}

		started := time.Now()
		var segs []transcript.Segment
		var sse *sseWriter
		if req.stream {
			sse = newSSE(w)
		}
		emit := func(seg listen.Segment) error {
			if len(segs) == 0 {
				s.met.ttfa.WithLabelValues(endpointOf(r), id).Observe(time.Since(started).Seconds())
			}
			ts := segment(seg)
			segs = append(segs, ts)
			if sse == nil {
				return nil
			}
			if err := sse.event(segmentEvent{Type: "transcript.text.segment", ID: strconv.Itoa(ts.ID), Start: ts.Start, End: ts.End, Text: strings.TrimSpace(ts.Text)}); err != nil {
				return err
			}
			return sse.event(deltaEvent{Type: "transcript.text.delta", Delta: ts.Text})
		}
		res, err := m.Transcribe(ctx, in, req.opts, emit)
		if err != nil {
			e := s.failed(ctx, id, err)
			if sse != nil && sse.started {
				_ = sse.event(struct {
					Type  string    `json:"type"`
					Error *apiError `json:"error"`
				}{"error", e}) // the stream is already 200: the error travels in it
				return
			}
			writeError(w, e)
			return
		}
		if res.Duration > 0 {
			s.met.rtf.WithLabelValues(endpointOf(r), id).Observe(time.Since(started).Seconds() / res.Duration)
			s.met.audioSecs.WithLabelValues(endpointOf(r), id).Add(res.Duration)
		}
		if sse != nil {
			_ = sse.event(doneEvent{Type: "transcript.text.done", Text: transcript.Join(segs)}) // a gone client has nothing to read
			return
		}
		var b bytes.Buffer
		info := transcript.Info{Task: task, Language: res.LanguageName, Duration: res.Duration}
		if err := transcript.Encode(&b, req.format, segs, transcript.Options{Info: info}); err != nil {
			writeError(w, s.failed(ctx, id, err))
			return
		}
		w.Header().Set("Content-Type", req.format.ContentType())
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		_, _ = w.Write(b.Bytes()) // a gone client has nothing to read
	}
}

// segment converts a library segment to the transcript formats' own.
func segment(s listen.Segment) transcript.Segment {
	var words []transcript.Word
	for _, w := range s.Words {
		words = append(words, transcript.Word{Text: strings.TrimSpace(w.Text), Start: w.Start, End: w.End, Probability: w.Probability})
	}
	return transcript.Segment{Words: words, ID: s.ID, Seek: s.Seek, Start: s.Start, End: s.End, Text: s.Text, Tokens: s.Tokens,
		Language: s.Language, Temperature: s.Temperature, AvgLogProb: s.AvgLogProb, CompressionRatio: s.CompressionRatio,
		NoSpeechProb: s.NoSpeechProb, EndsUtterance: s.EndsUtterance}
}

// failed classifies the error of a model call, logging those that are
// the server's fault.
func (s *Server) failed(ctx context.Context, model string, err error) *apiError {
	e := classify(ctx, err)
	if e.status >= 500 && e.status != 499 {
		s.log.Error("request failed", "model", model, "err", err)
	}
	return e
}

// parseTranscribe reads and checks the multipart form.
func (s *Server) parseTranscribe(w http.ResponseWriter, r *http.Request, translate bool) (*transcribeRequest, *apiError) {
	limit := s.cfg.MaxUploadBytes + multipartOverhead
	if r.ContentLength > limit {
		return nil, tooLarge(s.cfg.MaxUploadBytes)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/form-data") {
		return nil, badRequest("", "invalid_content_type", "want a multipart/form-data body with the audio as 'file', got Content-Type %q", ct)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseMultipartForm(formMemory); err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, tooLarge(s.cfg.MaxUploadBytes)
		}
		return nil, badRequest("", "invalid_multipart", "cannot read the multipart form: %v", err)
	}
	form := r.MultipartForm
	for k, vs := range form.Value {
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return nil, badRequest(k, "invalid_utf8", "%s is not valid UTF-8", k)
			}
		}
	}
	get := func(k string) string {
		if vs := form.Value[k]; len(vs) > 0 {
			return strings.TrimSpace(vs[0])
		}
		return ""
	}
	files := form.File["file"]
	if len(files) == 0 {
		return nil, badRequest("file", "missing_file", "the audio file is missing: send it as the multipart field 'file'")
	}
	fh := files[0]
	if fh.Size == 0 {
		return nil, badRequest("file", "empty_file", "the audio file %q is empty", fh.Filename)
	}
	if fh.Size > s.cfg.MaxUploadBytes {
		return nil, tooLarge(s.cfg.MaxUploadBytes)
	}
	req := &transcribeRequest{}
	switch f := get("response_format"); f {
	case "", "json", "text", "srt", "vtt", "verbose_json":
		req.format, _ = transcript.ParseResponseFormat(f) // each of these parses
	default:
		return nil, badRequest("response_format", "invalid_response_format", "response_format %q: want json, text, srt, vtt or verbose_json", f)
	}
	var aerr *apiError
	if req.model, aerr = s.transcriptionModel(get("model")); aerr != nil {
		return nil, aerr
	}
	req.opts = listen.Options{Language: get("language"), Prompt: get("prompt"), Translate: translate}
	if t := get("temperature"); t != "" {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, badRequest("temperature", "invalid_temperature", "temperature %q: want a number from 0 to 1", t)
		}
		req.opts.Temperature = v
	}
	if st := get("stream"); st != "" {
		v, err := strconv.ParseBool(st)
		if err != nil {
			return nil, badRequest("stream", "invalid_stream", "stream %q: want true or false", st)
		}
		req.stream = v
	}
	for _, k := range []string{"timestamp_granularities[]", "timestamp_granularities"} {
		for _, g := range form.Value[k] {
			switch g {
			case "word":
				req.opts.Words = true
			case "segment":
			default:
				return nil, badRequest(k, "invalid_timestamp_granularity", "timestamp granularity %q: want word or segment", g)
			}
		}
	}
	f, err2 := fh.Open()
	if err2 != nil {
		return nil, classify(r.Context(), fmt.Errorf("opening the uploaded file: %w", err2))
	}
	req.file = f
	return req, nil
}

func tooLarge(limit int64) *apiError {
	return newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "file", "file_too_large",
		fmt.Sprintf("the upload is larger than this server's limit of %d bytes", limit))
}

// transcriptionModel finds the model a request names: "" and OpenAI's
// names take the default.
func (s *Server) transcriptionModel(name string) (*lazy[Transcriber], *apiError) {
	m, ok := resolve(s.stt, name, "whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe")
	if !ok {
		return nil, badRequest("model", "model_not_found", "model %q is not served here; try one of %s (or whisper-1)", name, strings.Join(ids(s.stt), ", "))
	}
	return m, nil
}

// The server-sent events of a streamed transcription, as OpenAI's
// streaming transcription sends them.
type (
	segmentEvent struct {
		Type  string  `json:"type"`
		ID    string  `json:"id"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
		Text  string  `json:"text"`
	}
	deltaEvent struct {
		Type  string `json:"type"`
		Delta string `json:"delta"`
	}
	doneEvent struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
)

// sseWriter writes server-sent events, flushing each so that it leaves at
// once.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func newSSE(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// event sends v as one "data:" event.
func (e *sseWriter) event(v any) error {
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // nginx passes each event on at once
		e.w.WriteHeader(http.StatusOK)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("server: encoding an event: %w", err)
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return e.rc.Flush()
}
