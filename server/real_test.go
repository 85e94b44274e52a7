package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/internal/testenv"
	"github.com/tensorforge/forge/speech/listen"
)

// The tests here run Whisper tiny (fetched by make models) behind the
// server; the HTTP behaviour is tested with fakes in the other files.

var whisperTiny struct {
	once sync.Once
	t    *listen.Transcriber
	err  error
}

// realServer serves the real Whisper tiny; the model stays open for the
// package's tests (Shutdown closes only what the server opened itself).
func realServer(t *testing.T) (string, *Server) {
	t.Helper()
	whisperTiny.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		whisperTiny.t, whisperTiny.err = listen.New(ctx, listen.Config{Model: "tiny", Device: "cpu"})
	})
	if whisperTiny.err != nil {
		t.Fatalf("Whisper tiny (make models fetches it): %v", whisperTiny.err)
	}
	shared := keepOpen{whisperTiny.t}
	ts, s := testServer(t, Config{Transcribers: []Model[Transcriber]{{"whisper-tiny", func(context.Context) (Transcriber, error) { return shared, nil }}}}, nil, nil)
	return ts.URL, s
}

// keepOpen shares a model between test servers: their Shutdown does not
// close it.
type keepOpen struct{ *listen.Transcriber }

func (keepOpen) Close() error { return nil }

func jfkPCM(t *testing.T) []byte {
	t.Helper()
	c, err := audio.DecodeFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != 16000 {
		t.Fatalf("jfk.wav at %d Hz", c.SampleRate)
	}
	return pcm16(c.Samples)
}

// sendLive streams pcm in 20 ms messages.
func sendLive(t *testing.T, ctx context.Context, c *websocket.Conn, pcm []byte) {
	t.Helper()
	const chunk = 2 * 320 // 20 ms at 16 kHz
	for i := 0; i < len(pcm); i += chunk {
		if err := c.Write(ctx, websocket.MessageBinary, pcm[i:min(i+chunk, len(pcm))]); err != nil {
			t.Fatal(err)
		}
	}
}

// readLiveEvents reads events until the server closes the session.
func readLiveEvents(t *testing.T, ctx context.Context, c *websocket.Conn) []liveEvent {
	t.Helper()
	var evs []liveEvent
	for {
		var ev liveEvent
		if err := wsjson.Read(ctx, c, &ev); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("read: %v (events so far %+v)", err, evs)
			}
			return evs
		}
		evs = append(evs, ev)
	}
}

const jfkWords = "what you can do for your country"

func checkJFK(t *testing.T, evs []liveEvent) {
	t.Helper()
	if len(evs) < 2 || evs[len(evs)-1].Type != "done" {
		t.Fatalf("events %+v: want segments then done", evs)
	}
	for _, ev := range evs[:len(evs)-1] {
		if ev.Type != "segment" || !ev.Final {
			t.Errorf("event %+v before done", ev)
		}
	}
	done := evs[len(evs)-1]
	if !strings.Contains(normalize(done.Text), jfkWords) || done.Language != "english" || done.Duration < 10 {
		t.Errorf("done %+v", done)
	}
}

func normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r == ' ' {
			return r
		}
		return ' '
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// TestLiveJFK streams jfk.wav in 20 ms messages and gets its text; with
// ?partials=true also partial and final events (partials only when
// decoding keeps up, so at least the finals are required): a final at
// each pause of listen.DefaultFinalPause, more than the VAD's four
// utterances, or one per utterance with ?final_pause=0.
func TestLiveJFK(t *testing.T) {
	url, _ := realServer(t)
	for _, c := range []struct {
		query    string
		partials bool
		finals   func(int) bool
	}{
		{"partials=false", false, func(n int) bool { return n == 0 }},
		{"partials=true", true, func(n int) bool { return n > 4 }},
		{"partials=true&final_pause=0", true, func(n int) bool { return n == 4 }},
	} {
		partials, want := c.partials, c.finals
		t.Run(c.query, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := dialLive(t, ctx, url, c.query)
			defer c.CloseNow()
			sendLive(t, ctx, c, jfkPCM(t))
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"end"}`)); err != nil {
				t.Fatal(err)
			}
			evs := readLiveEvents(t, ctx, c)
			var segs []liveEvent
			finals := 0
			for _, ev := range evs {
				switch ev.Type {
				case "final":
					finals++
				case "partial":
				default:
					segs = append(segs, ev)
				}
			}
			checkJFK(t, segs)
			if !want(finals) || !partials && len(segs) != len(evs) {
				t.Errorf("%d finals among %d events", finals, len(evs))
			}
		})
	}
}

// TestLiveWords: ?words=true on the live endpoint gives every segment its
// words, in order, within the segment, spelling its text; without it
// segments carry none.
func TestLiveWords(t *testing.T) {
	url, _ := realServer(t)
	for _, words := range []bool{true, false} {
		t.Run(fmt.Sprintf("words=%v", words), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := dialLive(t, ctx, url, fmt.Sprintf("words=%v", words))
			defer c.CloseNow()
			sendLive(t, ctx, c, jfkPCM(t))
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"end"}`)); err != nil {
				t.Fatal(err)
			}
			evs := readLiveEvents(t, ctx, c)
			var all []string
			for _, ev := range evs {
				if ev.Type != "segment" {
					continue
				}
				if !words {
					if len(ev.Words) != 0 {
						t.Errorf("segment %q has %d words without ?words=true", ev.Text, len(ev.Words))
					}
					continue
				}
				var ws []string
				for _, w := range ev.Words {
					if w.Start < ev.Start-0.01 || w.End > ev.End+0.01 || w.End < w.Start {
						t.Errorf("word %+v outside its segment [%.2f, %.2f]", w, ev.Start, ev.End)
					}
					ws = append(ws, w.Text)
				}
				if normalize(strings.Join(ws, " ")) != normalize(ev.Text) {
					t.Errorf("segment %q: words %q", ev.Text, ws)
				}
				all = append(all, ws...)
			}
			if words && !strings.Contains(normalize(strings.Join(all, " ")), jfkWords) {
				t.Errorf("words %q", all)
			}
		})
	}
}

// TestWords: timestamp_granularities[]=word gives verbose_json's words.
func TestWords(t *testing.T) {
	url, _ := realServer(t)
	b, err := os.ReadFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	res, body := postForm(t, url+"/v1/audio/transcriptions", b, "response_format", "verbose_json", "timestamp_granularities[]", "word")
	var v struct {
		Words []struct {
			Word       string
			Start, End float64
		}
	}
	if err := json.Unmarshal(body, &v); err != nil || res.StatusCode != 200 {
		t.Fatalf("%d %s: %v", res.StatusCode, body, err)
	}
	var ws []string
	last := 0.0
	for _, w := range v.Words {
		ws = append(ws, w.Word)
		if w.Start < last-0.01 || w.End < w.Start {
			t.Errorf("word %+v out of order (previous ended %.2f)", w, last)
		}
		last = w.End
	}
	if !strings.Contains(normalize(strings.Join(ws, " ")), jfkWords) || last < 9 || last > 11.1 {
		t.Errorf("words %q, last ends at %.2f", ws, last)
	}
}

// TestShutdownDrainsLive: Shutdown ends a live session's input where it
// has got to; the session sends what it heard and closes normally.
func TestShutdownDrainsLive(t *testing.T) {
	url, s := realServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialLive(t, ctx, url)
	defer c.CloseNow()
	sendLive(t, ctx, c, jfkPCM(t))
	var first liveEvent // a segment: audio is being transcribed
	if err := wsjson.Read(ctx, c, &first); err != nil || first.Type != "segment" {
		t.Fatalf("first event %+v, %v", first, err)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	evs := readLiveEvents(t, ctx, c)
	if len(evs) == 0 || evs[len(evs)-1].Type != "done" || !strings.HasPrefix(evs[len(evs)-1].Text, strings.TrimSpace(first.Text)) {
		t.Errorf("after Shutdown: %+v; want done, its text starting with %q", evs, first.Text)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestTruncatedWAV: a WAV whose data ends before its header says is
// refused with a 400 naming the cut, before the model runs.
func TestTruncatedWAV(t *testing.T) {
	url, _ := realServer(t)
	b, err := os.ReadFile(testenv.Shared(t, "data", "jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	res, body := postForm(t, url+"/v1/audio/transcriptions", b[:len(b)/3])
	if _, code := openAIError(t, body); res.StatusCode != 400 || code != "truncated_audio" {
		t.Errorf("%d %s", res.StatusCode, body)
	}
}

// TestFLACAndMP3: uploads are sniffed by content (package audio), so
// FLAC and MP3 are transcribed like WAV.
func TestFLACAndMP3(t *testing.T) {
	url, _ := realServer(t)
	for _, name := range []string{"jfk-1s.flac", "jfk-2s-48k.mp3"} {
		b, err := os.ReadFile(testenv.AudioFixture(t, name))
		if err != nil {
			t.Fatal(err)
		}
		res, body := postForm(t, url+"/v1/audio/transcriptions", b, "response_format", "text")
		if res.StatusCode != 200 || !strings.Contains(normalize(string(body)), "and so") {
			t.Errorf("%s: %d %q, want the start of jfk.wav (\"and so\")", name, res.StatusCode, body)
		}
	}
}
