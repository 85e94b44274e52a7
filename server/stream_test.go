package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/tensorforge/forge/audio"
)

// client bounds every request of these tests: a server that buffered a
// stream would hold the work at its gate and the test would fail here.
var client = &http.Client{Timeout: 20 * time.Second}

// TestSSEOrdering: the first segment reaches the client while the work is
// still going. The fake transcriber stops after its first segment until
// the client has read that segment's event, so a server that held events
// back until the end would never finish.
func TestSSEOrdering(t *testing.T) {
	tr := &fakeTranscriber{gate: make(chan struct{})}
	ts, _ := testServer(t, Config{}, tr, nil)
	ct, body := form(t, wav(t, 2.5), "stream", "true", "model", "whisper-tiny")
	res, err := client.Post(ts.URL+"/v1/audio/transcriptions", ct, body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(res.Body)
	var types, texts []string
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Text, Delta string }
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		types = append(types, ev.Type)
		texts = append(texts, ev.Text+ev.Delta)
		if len(types) == 1 {
			close(tr.gate) // the work goes on only now
		}
	}
	want := "transcript.text.segment transcript.text.delta transcript.text.segment transcript.text.delta transcript.text.segment transcript.text.delta transcript.text.done"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events %s\nwant %s", got, want)
	}
	if len(texts) == 0 || texts[len(texts)-1] != "s0 s1 s2" {
		t.Errorf("texts %q", texts)
	}
}

// TestSpeechChunkOrdering: the first audio block reaches the client while
// synthesis is still going (held until the client has it).
func TestSpeechChunkOrdering(t *testing.T) {
	sy := &fakeSynthesizer{text: "one two three four", gate: make(chan struct{})}
	ts, _ := testServer(t, Config{}, nil, sy)
	res, err := client.Post(ts.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"one two three four","voice":"af_heart"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.TransferEncoding == nil || res.TransferEncoding[0] != "chunked" {
		t.Errorf("transfer encoding %v, want chunked", res.TransferEncoding)
	}
	first := make([]byte, 44+4800)
	if _, err := io.ReadFull(res.Body, first); err != nil {
		t.Fatal(err)
	}
	close(sy.gate)
	rest, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 3*4800 {
		t.Errorf("after the first block: %d bytes, want %d", len(rest), 3*4800)
	}
	c, err := audio.ReadWAV(io.MultiReader(strings.NewReader(string(first)), strings.NewReader(string(rest))))
	if err != nil || c.SampleRate != 24000 || len(c.Samples) != 4*2400 || math.Abs(float64(c.Samples[100])-0.25) > 1e-4 {
		t.Errorf("WAV: %d Hz, %d samples, %v", c.SampleRate, len(c.Samples), err)
	}
}

// TestClientDisconnect: a client that goes away mid-stream cancels the
// work; the handler returns (goleak checks nothing is left).
func TestClientDisconnect(t *testing.T) {
	tr := &fakeTranscriber{gate: make(chan struct{}), ended: make(chan error, 1)}
	sy := &fakeSynthesizer{text: "one two three", gate: make(chan struct{}), ended: make(chan error, 1)}
	ts, _ := testServer(t, Config{}, tr, sy)
	tests := []struct {
		name  string
		req   func(ctx context.Context) (*http.Request, error)
		ended chan error
	}{
		{"sse", func(ctx context.Context) (*http.Request, error) {
			ct, body := form(t, wav(t, 3), "stream", "true")
			r, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/audio/transcriptions", body)
			if r != nil {
				r.Header.Set("Content-Type", ct)
			}
			return r, err
		}, tr.ended},
		{"speech", func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/audio/speech", strings.NewReader(`{"input":"one two three","voice":"af_heart"}`))
		}, sy.ended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := tt.req(ctx)
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := res.Body.Read(make([]byte, 16)); err != nil {
				t.Fatal(err)
			}
			cancel() // the client goes away while the work waits at its gate
			res.Body.Close()
			select {
			case err := <-tt.ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("work ended with %v, want context.Canceled", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the work was not cancelled when its client went away")
			}
		})
	}
}

// pcm16 is samples as 16-bit little-endian PCM.
func pcm16(samples []float32) []byte {
	b := make([]byte, 0, 2*len(samples))
	for _, x := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(int16(x*32767)))
	}
	return b
}

func dialLive(t *testing.T, ctx context.Context, url string, query ...string) *websocket.Conn {
	t.Helper()
	q := strings.Join(append([]string{"rate=16000"}, query...), "&")
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/v1/audio/transcriptions/live?"+q, nil)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	return c
}

func TestLiveBadInput(t *testing.T) {
	ts, _ := testServer(t, Config{}, &fakeTranscriber{gate: make(chan struct{})}, nil)
	for _, q := range []string{"rate=0", "rate=abc", "rate=400000", "model=nope", "final_pause=soon"} {
		res, err := client.Get(ts.URL + "/v1/audio/transcriptions/live?" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Errorf("%s: %d %s", q, res.StatusCode, b)
		}
		openAIError(t, b)
	}
	// The run may write its first segment before or after the reader has
	// met the bad message and cancelled the session: the error event must
	// come either way (a write on the cancelled session used to close the
	// connection first, and the client read EOF).
	for _, late := range []bool{false, true} {
		_, url := ts, ts.URL
		if late {
			lts, _ := testServer(t, Config{}, &fakeTranscriber{gate: make(chan struct{}), late: true}, nil)
			url = lts.URL
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c := dialLive(t, ctx, url)
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte(`hello`)); err != nil {
			t.Fatal(err)
		}
		var ev liveEvent
		for ev.Type != "error" { // the fake's first segment may come first
			if err := wsjson.Read(ctx, c, &ev); err != nil {
				t.Fatalf("first segment late=%v: no error event after a bad text message: %v", late, err)
			}
		}
		_, _, err := c.Read(ctx)
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Errorf("first segment late=%v: close: %v, want policy violation", late, err)
		}
	}
}

// TestLiveDisconnect: a live client that vanishes ends its session.
func TestLiveDisconnect(t *testing.T) {
	tr := &fakeTranscriber{gate: make(chan struct{}), ended: make(chan error, 1)}
	ts, _ := testServer(t, Config{}, tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialLive(t, ctx, ts.URL)
	if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 640)); err != nil {
		t.Fatal(err)
	}
	var ev liveEvent // the fake's first segment: the session is under way
	if err := wsjson.Read(ctx, c, &ev); err != nil {
		t.Fatal(err)
	}
	c.CloseNow()
	select {
	case err := <-tr.ended:
		if !errors.Is(err, context.Canceled) {
			t.Error("a session whose client vanished ended without an error")
		}
	case <-ctx.Done():
		t.Fatal("session not ended after its client vanished")
	}
}

// TestShutdown: a request past the drain deadline is cancelled; a live
// session being drained is tested with the real model (real_test.go).
func TestShutdown(t *testing.T) {
	t.Run("deadline cancels", func(t *testing.T) {
		tr := &fakeTranscriber{gate: make(chan struct{}), started: make(chan struct{}, 1), ended: make(chan error, 1)}
		ts, s := testServer(t, Config{}, tr, nil)
		ct, body := form(t, wav(t, 2))
		go func() {
			if res, err := client.Post(ts.URL+"/v1/audio/transcriptions", ct, body); err == nil {
				res.Body.Close()
			}
		}()
		<-tr.started
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the deadline has passed
		if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-tr.ended; !errors.Is(err, context.Canceled) {
			t.Errorf("in-flight work ended with %v, want cancelled", err)
		}
	})
}
