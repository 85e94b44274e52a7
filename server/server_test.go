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
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tensorforge/forge/audio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer serves cfg on loopback for one test, with fakes tr and sy
// (new ones when nil) as whisper-tiny and kokoro, and another fake as
// whisper-base, unless cfg has models.
func testServer(t *testing.T, cfg Config, tr *fakeTranscriber, sy *fakeSynthesizer) (*httptest.Server, *Server) {
	t.Helper()
	if tr == nil {
		tr = &fakeTranscriber{}
	}
	if sy == nil {
		sy = &fakeSynthesizer{}
	}
	if cfg.Transcribers == nil && cfg.Synthesizers == nil {
		cfg.Transcribers, cfg.Synthesizers = fakes(tr, sy)
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 30 * time.Second // a hung test fails in bounded time
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return ts, s
}

// wav returns a 16 kHz WAV of sec seconds of a quiet tone.
func wav(t *testing.T, sec float64) []byte {
	t.Helper()
	c := audio.Clip{SampleRate: 16000, Samples: make([]float32, int(sec*16000))}
	for i := range c.Samples {
		c.Samples[i] = 0.1 * float32(i%40-20) / 20
	}
	var b bytes.Buffer
	if err := audio.WriteWAV(&b, c, audio.Int16); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// form builds a multipart body: file (if non-nil) and fields in order.
func form(t *testing.T, file []byte, fields ...string) (string, *bytes.Buffer) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if file != nil {
		fw, err := mw.CreateFormFile("file", "audio.wav")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		mw.WriteField(fields[i], fields[i+1])
	}
	mw.Close()
	return mw.FormDataContentType(), &b
}

func postForm(t *testing.T, url string, file []byte, fields ...string) (*http.Response, []byte) {
	t.Helper()
	ct, body := form(t, file, fields...)
	res, err := http.Post(url, ct, body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// openAIError decodes an error body, failing the test if it is not
// OpenAI's shape.
func openAIError(t *testing.T, b []byte) (message, code string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("error body %q is not OpenAI's {\"error\":{message,type,param,code}} (%v)", b, err)
	}
	if e.Error.Code != nil {
		code = *e.Error.Code
	}
	return e.Error.Message, code
}

func TestTranscriptionFormats(t *testing.T) {
	ts, _ := testServer(t, Config{}, nil, nil)
	audio := wav(t, 2.5)
	tests := []struct {
		format, ctype string
		want          string
	}{
		{"", "application/json", `{"text":"s0 s1 s2"}` + "\n"},
		{"json", "application/json", `{"text":"s0 s1 s2"}` + "\n"},
		{"text", "text/plain; charset=utf-8", "s0 s1 s2\n"},
		{"srt", "application/x-subrip; charset=utf-8", "1\n00:00:00,000 --> 00:00:01,000\ns0\n\n2\n00:00:01,000 --> 00:00:02,000\ns1\n\n3\n00:00:02,000 --> 00:00:03,000\ns2\n\n"},
		{"vtt", "text/vtt; charset=utf-8", "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\ns0\n\n00:00:01.000 --> 00:00:02.000\ns1\n\n00:00:02.000 --> 00:00:03.000\ns2\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			res, b := postForm(t, ts.URL+"/v1/audio/transcriptions", audio, "model", "whisper-1", "response_format", tt.format)
			if res.StatusCode != 200 || string(b) != tt.want || res.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("%d %q %q; want 200 %q %q", res.StatusCode, res.Header.Get("Content-Type"), b, tt.ctype, tt.want)
			}
		})
	}
	t.Run("verbose_json", func(t *testing.T) {
		res, b := postForm(t, ts.URL+"/v1/audio/translations", audio, "model", "whisper-base", "response_format", "verbose_json")
		var v struct {
			Task, Language, Text string
			Duration             float64
			Segments             []struct {
				ID         int
				Start, End float64
				Text       string
			}
		}
		if err := json.Unmarshal(b, &v); err != nil || res.StatusCode != 200 {
			t.Fatalf("%d %s: %v", res.StatusCode, b, err)
		}
		if v.Task != "translate" || v.Language != "english" || v.Duration != 3 || v.Text != "t0 t1 t2" || len(v.Segments) != 3 || v.Segments[2].ID != 2 || v.Segments[1].Start != 1 {
			t.Errorf("verbose_json = %+v", v)
		}
	})
}

func TestTranscriptionBadInput(t *testing.T) {
	ts, _ := testServer(t, Config{MaxUploadBytes: 1 << 20}, nil, nil)
	good := wav(t, 1)
	tests := []struct {
		name   string
		file   []byte
		fields []string
		status int
		code   string
	}{
		{"no file", nil, nil, 400, "missing_file"},
		{"empty file", []byte{}, nil, 400, "empty_file"},
		{"not audio", []byte("this is not a wav file at all, just text"), nil, 400, "unsupported_audio"},
		{"truncated wav", good[:len(good)/2], nil, 400, "truncated_audio"},
		{"header cut", good[:40], nil, 400, "truncated_audio"},
		{"no samples", wav(t, 0), nil, 400, "empty_audio"},
		{"unknown model", good, []string{"model", "whisper-huge"}, 400, "model_not_found"},
		{"bad format", good, []string{"response_format", "mp3"}, 400, "invalid_response_format"},
		{"bad temperature", good, []string{"temperature", "hot"}, 400, "invalid_temperature"},
		{"bad stream", good, []string{"stream", "maybe"}, 400, "invalid_stream"},
		{"bad granularity", good, []string{"timestamp_granularities[]", "char"}, 400, "invalid_timestamp_granularity"},
		{"invalid utf-8 prompt", good, []string{"prompt", "caf\xe9"}, 400, "invalid_utf8"},
		{"unknown language", good, []string{"language", "xx"}, 400, "invalid_language"},
		{"file over limit", make([]byte, 1<<20+1), nil, 413, "file_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, b := postForm(t, ts.URL+"/v1/audio/transcriptions", tt.file, tt.fields...)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", res.StatusCode, b, tt.status)
			}
			if _, code := openAIError(t, b); code != tt.code {
				t.Errorf("code %q (%s), want %q", code, b, tt.code)
			}
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		res, err := http.Post(ts.URL+"/v1/audio/transcriptions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if _, code := openAIError(t, b); res.StatusCode != 400 || code != "invalid_content_type" {
			t.Errorf("%d %s", res.StatusCode, b)
		}
	})
}

// endless is an upload of n bytes made up as it is read, so that a
// 200 MB body costs no memory.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), e.n)
	clear(p[:k])
	e.n -= k
	return int(k), nil
}

func TestUpload200MB(t *testing.T) {
	ts, _ := testServer(t, Config{}, nil, nil) // the default 25 MB limit
	const size = 200 << 20
	head := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
	for _, known := range []bool{true, false} {
		t.Run(fmt.Sprintf("content-length %v", known), func(t *testing.T) {
			body := io.MultiReader(strings.NewReader(head), &endless{size}, strings.NewReader("\r\n--B--\r\n"))
			req, err := http.NewRequest("POST", ts.URL+"/v1/audio/transcriptions", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
			if known {
				req.ContentLength = int64(len(head)) + size + 9
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 413 {
				t.Fatalf("status %d (%s), want 413", res.StatusCode, b)
			}
			if _, code := openAIError(t, b); code != "file_too_large" {
				t.Errorf("code %q", code)
			}
		})
	}
}

func TestSpeech(t *testing.T) {
	sy := &fakeSynthesizer{}
	ts, _ := testServer(t, Config{MaxInputChars: 20}, nil, sy)
	tests := []struct {
		name   string
		body   string
		status int
		code   string
		bytes  int // of the audio
		ctype  string
	}{
		{"wav", `{"model":"tts-1","input":"one two three","voice":"af_heart"}`, 200, "", 44 + 3*4800, "audio/wav"},
		{"pcm", `{"model":"kokoro","input":"one two","voice":"alloy","response_format":"pcm","speed":1.5}`, 200, "", 2 * 4800, "audio/pcm"},
		{"unknown voice", `{"input":"hello","voice":"zz_nobody"}`, 400, "invalid_voice", 0, ""},
		{"no voice", `{"input":"hello"}`, 400, "missing_voice", 0, ""},
		{"unknown model", `{"model":"tts-9","input":"hello","voice":"af_heart"}`, 400, "model_not_found", 0, ""},
		{"mp3", `{"input":"hello","voice":"af_heart","response_format":"mp3"}`, 400, "unsupported_response_format", 0, ""},
		{"speed", `{"input":"hello","voice":"af_heart","speed":9}`, 400, "invalid_speed", 0, ""},
		{"empty input", `{"input":"  ","voice":"af_heart"}`, 400, "missing_input", 0, ""},
		{"too long", `{"input":"` + strings.Repeat("a", 21) + `","voice":"af_heart"}`, 400, "input_too_long", 0, ""},
		{"invalid utf-8", "{\"input\":\"caf\xe9\",\"voice\":\"af_heart\"}", 400, "invalid_utf8", 0, ""},
		{"lone surrogate", `{"input":"a \ud800 b","voice":"af_heart"}`, 400, "invalid_utf8", 0, ""},
		{"not json", `input=hello`, 400, "invalid_json", 0, ""},
		{"huge body", `{"input":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "request_too_large", 0, ""},
		{"fails before audio", `{"input":"FAIL","voice":"af_heart"}`, 500, "internal_error", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in struct{ Input string }
			json.Unmarshal([]byte(tt.body), &in) // bodies that are not JSON are among the cases
			sy.text = in.Input
			res, err := http.Post(ts.URL+"/v1/audio/speech", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status {
				t.Fatalf("status %d (%.200s), want %d", res.StatusCode, b, tt.status)
			}
			if tt.status != 200 {
				if _, code := openAIError(t, b); code != tt.code {
					t.Errorf("code %q, want %q", code, tt.code)
				}
				return
			}
			if len(b) != tt.bytes || res.Header.Get("Content-Type") != tt.ctype || res.Header.Get("X-Sample-Rate") != "24000" {
				t.Errorf("%d bytes of %s at %s Hz; want %d of %s", len(b), res.Header.Get("Content-Type"), res.Header.Get("X-Sample-Rate"), tt.bytes, tt.ctype)
			}
		})
	}
	t.Run("fails after audio", func(t *testing.T) {
		sy.text = "one FAIL"
		res, err := http.Post(ts.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"one FAIL","voice":"af_heart"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || err == nil {
			t.Errorf("status %d, read error %v: want the 200 stream cut off with an error", res.StatusCode, err)
		}
	})
}

func TestModelsAndHealth(t *testing.T) {
	ts, s := testServer(t, Config{}, nil, nil)
	get := func(path string) (int, string) {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, b := get("/readyz"); code != 503 {
		t.Errorf("readyz before Warm: %d %s", code, b)
	}
	if err := s.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		status int
		has    []string
	}{
		{"/healthz", 200, []string{`"ok"`}},
		{"/readyz", 200, []string{`"ready"`}},
		{"/v1/models", 200, []string{`"whisper-tiny"`, `"whisper-base"`, `"kokoro"`, `"whisper-1"`, `"tts-1"`, `"object":"list"`}},
		{"/v1/models/whisper-base", 200, []string{`"id":"whisper-base"`}},
		{"/v1/models/gpt-5", 404, []string{`"model_not_found"`}},
		{"/v1/nothing", 404, []string{`"not_found"`}},
		{"/metrics", 200, []string{"forge_model_load_seconds{model=\"kokoro\"}", `forge_http_requests_total{code="200",endpoint="/v1/models"} 1`, "go_goroutines", "process_resident_memory_bytes"}},
	}
	for _, tt := range tests {
		code, b := get(tt.path)
		if code != tt.status {
			t.Errorf("GET %s: %d %s", tt.path, code, b)
		}
		for _, h := range tt.has {
			if !strings.Contains(b, h) {
				t.Errorf("GET %s lacks %s:\n%.2000s", tt.path, h, b)
			}
		}
	}
}

func TestAuth(t *testing.T) {
	ts, _ := testServer(t, Config{APIKey: "sk-secret"}, nil, nil)
	tests := []struct {
		path, auth string
		status     int
	}{
		{"/v1/models", "", 401},
		{"/v1/models", "Bearer sk-wrong", 401},
		{"/v1/models", "Bearer sk-secret-longer", 401},
		{"/v1/models", "sk-secret", 401},
		{"/v1/models", "Basic sk-secret", 401},
		{"/v1/models", "Bearer sk-secret", 200},
		{"/v1/nothing", "", 401},
		{"/healthz", "", 200},
		{"/metrics", "", 200},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", ts.URL+tt.path, nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("%s with %q: %d, want %d", tt.path, tt.auth, res.StatusCode, tt.status)
		}
		if tt.status == 401 {
			if _, code := openAIError(t, b); code != "invalid_api_key" {
				t.Errorf("code %q", code)
			}
		}
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(2, 1, nil)
	ctx := context.Background()
	r1, err1 := l.acquire(ctx)
	r2, err2 := l.acquire(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	got := make(chan error, 1)
	go func() {
		r, err := l.acquire(ctx) // waits in the queue
		if err == nil {
			r()
		}
		got <- err
	}()
	// The queue holds one: once the waiter is in it, the next is refused.
	waitWaiting(t, l, 1)
	if _, err := l.acquire(ctx); !errors.Is(err, errBusy) {
		t.Errorf("acquire beyond slots and queue: %v, want errBusy", err)
	}
	if ra := l.retryAfter(); ra < 1 {
		t.Errorf("retryAfter %d", ra)
	}
	r1()
	r1() // a second release is a no-op, not a freed slot
	if err := <-got; err != nil {
		t.Errorf("queued acquire: %v", err)
	}
	// With both slots held again, a waiter whose context ends leaves the
	// queue with the context's error. (Taking r3 before the waiter starts
	// keeps the waiter from racing it to the free slot.)
	r3, err := l.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { _, err := l.acquire(cctx); got <- err }()
	waitWaiting(t, l, 1)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	r2()
	r3()
	if len(l.slots) != 0 || l.waiting != 0 {
		t.Errorf("after all releases: %d slots held, %d waiting", len(l.slots), l.waiting)
	}
}

// waitWaiting waits until n callers wait in l's queue.
func waitWaiting(t *testing.T, l *limiter, n int) {
	t.Helper()
	for {
		l.mu.Lock()
		w := l.waiting
		l.mu.Unlock()
		if w == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBusyAnswers429(t *testing.T) {
	tr := &fakeTranscriber{gate: make(chan struct{}), started: make(chan struct{}, 4)}
	ts, _ := testServer(t, Config{MaxConcurrent: 1, MaxQueue: 1}, tr, nil)
	audio := wav(t, 2)
	results := make(chan int, 2)
	post := func() {
		res, _ := postForm(t, ts.URL+"/v1/audio/transcriptions", audio, "model", "whisper-tiny")
		results <- res.StatusCode
	}
	go post()
	<-tr.started // the first holds the slot, held at its gate
	go post()    // the second waits in the queue
	waitFor(t, func() bool { return gauge(t, ts.URL, `forge_queue_depth{model="whisper-tiny"}`) == "1" })
	res, b := postForm(t, ts.URL+"/v1/audio/transcriptions", audio, "model", "whisper-tiny")
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Errorf("third request: %d Retry-After %q (%s)", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	openAIError(t, b)
	// The other model has its own slots.
	if res, b := postForm(t, ts.URL+"/v1/audio/transcriptions", wav(t, 0.5), "model", "whisper-base"); res.StatusCode != 200 {
		t.Errorf("other model: %d %s", res.StatusCode, b)
	}
	close(tr.gate)
	for range 2 {
		if code := <-results; code != 200 {
			t.Errorf("admitted request: %d", code)
		}
	}
}

// gauge reads one series' value from /metrics.
func gauge(t *testing.T, base, series string) string {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond (state another goroutine reaches) for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached in 10 s")
}
