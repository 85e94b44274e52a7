package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/transcript"
)

// maxLiveMessage bounds one WebSocket message: a second of 384 kHz PCM is
// 768 KB, far above the 20–100 ms blocks a client sends.
const maxLiveMessage = 1 << 20

// liveEvent is a JSON event of a live session, server to client:
// "segment" (final: true; its text will not change), "done" (the input
// ended and everything is transcribed: the whole text) and "error".
type liveEvent struct {
	Type  string  `json:"type"`
	Final bool    `json:"final,omitempty"`
	ID    int     `json:"id,omitempty"`
	Start float64 `json:"start,omitempty"`
	End   float64 `json:"end,omitempty"`
	Text  string  `json:"text,omitempty"`
	// Words are a segment's word times, with ?words=true.
	Words    []transcript.Word `json:"words,omitempty"`
	Language string            `json:"language,omitempty"`
	Duration float64           `json:"duration,omitempty"`
	Error    *apiError         `json:"error,omitempty"`
}

// liveTranscriber is a Transcriber that also reads utterances while they
// are spoken (*listen.Transcriber); ?partials=true on another gets
// segments only.
type liveTranscriber interface {
	TranscribeLive(ctx context.Context, in listen.Input, o listen.Options, emit func(listen.Event) error) (*listen.LiveResult, error)
}

// liveSession is a live transcription in progress; Shutdown finishes it
// by ending its input, so that it sends its last segments and closes.
type liveSession struct {
	once sync.Once
	end  func()
}

func (ls *liveSession) finish() { ls.once.Do(ls.end) }

// live serves GET /v1/audio/transcriptions/live: a WebSocket on which the
// client sends binary messages of 16-bit little-endian mono PCM at the
// rate given in the query (?rate=16000, the default; also model and
// language), and a text message {"type":"end"} (or a normal close) when
// its audio ends. The server sends each segment as a JSON event as soon
// as the utterance it belongs to has ended, then "done" and a normal
// close. With ?partials=true it also sends speech/listen's live events
// (listen.Event as JSON: {"type":"partial"} while an utterance is spoken,
// with its committed and tentative text, and {"type":"final"} before the
// utterance's segments); an utterance's final comes once the speaker has
// paused for ?final_pause (a duration, listen.DefaultFinalPause by
// default; 0: only when the VAD closes it). With ?words=true each segment
// carries its words' times (as the transcription endpoint's
// timestamp_granularities[]=word).
// The session holds one of the model's work slots throughout.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	ctx, end, ok := s.begin(r)
	if !ok {
		unavailable(w)
		return
	}
	defer end()
	q := r.URL.Query()
	rate := 16000
	if v := q.Get("rate"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < audio.MinSampleRate || n > audio.MaxSampleRate {
			writeError(w, badRequest("rate", "invalid_rate", "rate %q: want a sample rate of %d to %d Hz", v, audio.MinSampleRate, audio.MaxSampleRate))
			return
		}
		rate = n
	}
	m, aerr := s.transcriptionModel(strings.TrimSpace(q.Get("model")))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	opts := listen.Options{Language: strings.TrimSpace(q.Get("language")), Live: true, Words: q.Get("words") == "true"}
	if v := q.Get("final_pause"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			writeError(w, badRequest("final_pause", "invalid_final_pause", "final_pause %q: want a duration such as 128ms, or 0 for finals when the VAD closes an utterance only", v))
			return
		}
		opts.FinalPause = d
		if d <= 0 {
			opts.FinalPause = -1 // listen's 0 is its default
		}
	}
	release := s.admit(ctx, w, m.id)
	if release == nil {
		return
	}
	defer release()
	t, err := m.get(ctx, s.base)
	if err != nil {
		writeError(w, s.failed(ctx, m.id, err))
		return
	}
	stream, err := listen.NewStream(rate)
	if err != nil {
		writeError(w, classify(ctx, err))
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered the client
	}
	defer c.CloseNow()
	c.SetReadLimit(maxLiveMessage)

	// After the upgrade the request's context no longer follows the
	// client: the reader cancels ctx when the connection breaks, with
	// errBadInput as the cause when the client breaks the protocol.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ls := &liveSession{end: func() { stream.Close() }}
	s.mu.Lock()
	s.sessions[ls] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, ls)
		s.mu.Unlock()
	}()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readLive(ctx, c, stream, ls, cancel)
	}()

	// send writes one event. Not with ctx: the websocket library closes
	// the connection when a write's context ends, and the reader cancels
	// ctx as soon as the client breaks the protocol, a race that left the
	// client without its error event (an EOF instead). A client that
	// stops reading fails the write after liveWriteTimeout.
	send := func(v any) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		wctx, cancelWrite := context.WithTimeout(context.WithoutCancel(ctx), liveWriteTimeout)
		defer cancelWrite()
		return wsjson.Write(wctx, c, v)
	}
	started := time.Now()
	n := 0
	var segs []transcript.Segment
	emit := func(seg listen.Segment) error {
		if n == 0 {
			s.met.ttfa.WithLabelValues(endpointOf(r), m.id).Observe(time.Since(started).Seconds())
		}
		ts := segment(seg)
		segs = append(segs, ts)
		ev := liveEvent{Type: "segment", Final: true, ID: n, Start: seg.Start, End: seg.End, Text: seg.Text, Words: ts.Words}
		n++
		return send(ev)
	}
	var res *listen.Result
	if lt, ok := t.(liveTranscriber); ok && q.Get("partials") == "true" {
		var lr *listen.LiveResult
		lr, err = lt.TranscribeLive(ctx, stream, opts, func(e listen.Event) error {
			if err := send(e); err != nil {
				return err
			}
			for _, seg := range e.Segments {
				if err := emit(seg); err != nil {
					return err
				}
			}
			return nil
		})
		if lr != nil {
			res = lr.Result
		}
	} else {
		res, err = t.Transcribe(ctx, stream, opts, emit)
	}
	stream.Close() // the reader's writes fail from here on
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errBadInput) {
			err = cause // the run may have stopped on the cancellation, not its cause
		}
		e := s.failed(ctx, m.id, err)
		code := websocket.StatusPolicyViolation
		if e.status >= 500 {
			code = websocket.StatusInternalError
		}
		if e.status != 499 {
			_ = wsjson.Write(context.WithoutCancel(ctx), c, liveEvent{Type: "error", Error: e}) // the close below tells the client too
		}
		_ = c.Close(code, truncateReason(e.Message))
		cancel(nil)
		<-readDone
		return
	}
	if res.Duration > 0 {
		s.met.rtf.WithLabelValues(endpointOf(r), m.id).Observe(time.Since(started).Seconds() / res.Duration)
		s.met.audioSecs.WithLabelValues(endpointOf(r), m.id).Add(res.Duration)
	}
	done := liveEvent{Type: "done", Text: transcript.Join(segs), Language: res.LanguageName, Duration: round3(res.Duration)}
	if err := send(done); err == nil {
		_ = c.Close(websocket.StatusNormalClosure, "") // a client gone meanwhile has nothing to be told
	}
	cancel(nil)
	<-readDone
}

// liveWriteTimeout bounds one event's write to a live client.
const liveWriteTimeout = 30 * time.Second

// readLive feeds the client's PCM messages to stream until the client
// ends its input or goes away; a broken connection cancels the session.
func readLive(ctx context.Context, c *websocket.Conn, stream *listen.Stream, ls *liveSession, cancel context.CancelCauseFunc) {
	var carry []byte // an odd byte of a sample split across messages
	var buf []float32
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				ls.finish()
				return
			}
			cancel(nil)
			return
		}
		if typ == websocket.MessageText {
			var m struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(data, &m) != nil || m.Type != "end" {
				cancel(fmt.Errorf(`%w: a text message must be {"type":"end"}; audio goes in binary messages`, errBadInput))
				return
			}
			ls.finish()
			continue // go on reading: the close handshake comes this way
		}
		if len(carry) > 0 {
			data = append(carry, data...)
			carry = nil
		}
		if len(data)%2 == 1 {
			carry = []byte{data[len(data)-1]}
			data = data[:len(data)-1]
		}
		buf = buf[:0]
		for i := 0; i+1 < len(data); i += 2 {
			buf = append(buf, float32(int16(binary.LittleEndian.Uint16(data[i:])))/32768)
		}
		_ = stream.Write(ctx, buf) // fails once the input has ended: later audio is dropped
	}
}

// truncateReason fits a close reason into a control frame (123 bytes).
func truncateReason(s string) string {
	if len(s) <= 120 {
		return s
	}
	return s[:120]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
