package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.* from the writers' output")

// jfk is a transcript in the shape listen produces for jfk.wav: two
// utterances, Whisper's leading spaces, tokens, words on the first.
var jfk = []Segment{
	{ID: 0, Seek: 0, Start: 0, End: 7.6, Text: " And so my fellow Americans, ask not what your country can do for you,",
		Tokens: []int32{50364, 400, 370, 452, 7177, 6280, 11, 50744}, Language: "en",
		Temperature: 0, AvgLogProb: -0.2368, CompressionRatio: 1.2, NoSpeechProb: 0.0101,
		Words: []Word{{Text: " And", Start: 0.32, End: 0.54, Probability: 0.91}, {Text: " so", Start: 0.54, End: 1.1, Probability: 0.99}}},
	{ID: 1, Seek: 0, Start: 7.6, End: 10.56, Text: " ask what you can do for your country.",
		Tokens: []int32{50744, 1029, 437, 50892}, Language: "en",
		Temperature: 0.2, AvgLogProb: -0.1, CompressionRatio: 1.1, NoSpeechProb: 0.002, EndsUtterance: true},
	{ID: 2, Seek: 1100, Start: 3725.4996, End: 3727.0, Text: " Thank you.", Language: "en", EndsUtterance: true},
}

// TestGolden writes jfk in every format and compares with
// testdata/golden.<format>; go test ./transcript -args -update rewrites them.
func TestGolden(t *testing.T) {
	for _, f := range []Format{Text, JSON, SRT, VTT, TSV, Verbose, OpenAIJSON, VerboseJSON} {
		t.Run(f.String(), func(t *testing.T) {
			var b bytes.Buffer
			opts := Options{Tokens: f == JSON, Info: Info{Language: "english", Duration: 3727.5}}
			if err := Encode(&b, f, jfk, opts); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden."+f.String())
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("got:\n%s\nwant:\n%s", b.Bytes(), want)
			}
			if f == JSON || f == OpenAIJSON || f == VerboseJSON {
				for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
					if !json.Valid([]byte(line)) {
						t.Fatalf("invalid JSON: %s", line)
					}
				}
			}
		})
	}
}

// TestJSONKeepsListenContract: listen's --json lines keep their fields
// and order (start, end, text, avg_logprob, no_speech_prob), without
// tokens unless asked; the new fields follow.
func TestJSONKeepsListenContract(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, JSON, jfk[1:2], Options{}); err != nil {
		t.Fatal(err)
	}
	want := `{"start":7.6,"end":10.56,"text":"ask what you can do for your country.","avg_logprob":-0.1,"no_speech_prob":0.002,"language":"en"}` + "\n"
	if b.String() != want {
		t.Fatalf("got  %s\nwant %s", b.String(), want)
	}
}

func TestClock(t *testing.T) {
	for _, tc := range []struct {
		sec  float64
		want string
	}{
		{0, "00:00:00.000"},
		{0.0004, "00:00:00.000"},
		{0.0006, "00:00:00.001"},
		{1.2344, "00:00:01.234"},
		{59.9996, "00:01:00.000"}, // rounding carries into the minutes
		{3599.9995, "01:00:00.000"},
		{3599.9994, "00:59:59.999"},
		{99*3600 + 59*60 + 59.999, "99:59:59.999"},
		{100 * 3600, "100:00:00.000"}, // hours widen, never wrap
		{-3, "00:00:00.000"},
		{math.NaN(), "00:00:00.000"},
		{math.Inf(1), "277777777:46:40.000"},
	} {
		if got := clock(tc.sec, '.'); got != tc.want {
			t.Errorf("clock(%v) = %s, want %s", tc.sec, got, tc.want)
		}
	}
	if got := clock(100*3600+0.5, ','); got != "100:00:00,500" {
		t.Errorf("SRT clock: %s", got)
	}
}

// TestText covers what segment text may hold: leading space, invalid
// UTF-8, line breaks, tabs, cue syntax.
func TestText(t *testing.T) {
	seg := func(text string) []Segment { return []Segment{{Start: 1, End: 2, Text: text}} }
	for _, tc := range []struct {
		name string
		f    Format
		segs []Segment
		want string
	}{
		{"vtt arrow", VTT, seg(" a --> b & <c>"), "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na --&gt; b &amp; &lt;c&gt;\n\n"},
		{"srt arrow", SRT, seg(" a --> b"), "1\n00:00:01,000 --> 00:00:02,000\na -> b\n\n"},
		{"srt line break", SRT, seg("one\n\ntwo"), "1\n00:00:01,000 --> 00:00:02,000\none  two\n\n"},
		{"json invalid utf-8", JSON, seg(" caf\xc3"), "{\"start\":1,\"end\":2,\"text\":\"caf\uFFFD\",\"avg_logprob\":0,\"no_speech_prob\":0}\n"},
		{"text invalid utf-8", Text, seg("\xff ok"), "\uFFFD ok\n"},
		{"tsv tab", TSV, seg("a\tb"), "start\tend\ttext\n1000\t2000\ta b\n"},
		{"verbose", Verbose, seg(" hi"), "[00:00:01.000 --> 00:00:02.000] hi\n"},
		{"end before start", SRT, []Segment{{Start: 5, End: 4, Text: "x"}}, "1\n00:00:05,000 --> 00:00:05,000\nx\n\n"},
		{"empty cue skipped", SRT, []Segment{{Start: 0, End: 1, Text: " "}, {Start: 1, End: 2, Text: "y"}}, "1\n00:00:01,000 --> 00:00:02,000\ny\n\n"},
		{"empty vtt", VTT, nil, "WEBVTT\n\n"},
		{"empty tsv", TSV, nil, "start\tend\ttext\n"},
		{"empty text", Text, nil, ""},
		{"empty openai json", OpenAIJSON, nil, `{"text":""}` + "\n"},
		{"empty verbose_json", VerboseJSON, nil, `{"task":"transcribe","language":"","duration":0,"text":"","segments":[]}` + "\n"},
		{"nan json", JSON, []Segment{{Start: math.NaN(), End: 1, Text: "n", AvgLogProb: math.Inf(-1)}}, `{"start":0,"end":1,"text":"n","avg_logprob":0,"no_speech_prob":0}` + "\n"},
		{"cjk joined without spaces", Text, []Segment{{Text: "我们"}, {Text: "走吧。", EndsUtterance: true}, {Text: " Hello"}, {Text: " world"}}, "我们走吧。\nHello world\n"},
	} {
		var b bytes.Buffer
		if err := Encode(&b, tc.f, tc.segs, Options{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}

// TestTextStreams: the Text format prints an utterance's line as soon as
// its last segment arrives, not at Close.
func TestTextStreams(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b, Text, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(jfk[0]); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 0 {
		t.Fatalf("a line before its utterance ended: %q", b.String())
	}
	if err := w.Write(jfk[1]); err != nil {
		t.Fatal(err)
	}
	want := "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(jfk[2]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

func TestFormatChooser(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Format
	}{{"text", Text}, {"TXT", Text}, {"json", JSON}, {"srt", SRT}, {"vtt", VTT}, {"tsv", TSV}, {"verbose", Verbose}, {"verbose_json", VerboseJSON}, {"openai_json", OpenAIJSON}} {
		if f, err := ParseFormat(tc.name); err != nil || f != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tc.name, f, err, tc.want)
		}
	}
	for _, bad := range []string{"", "xml", "jsonl"} {
		if _, err := ParseFormat(bad); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseFormat(%q): %v", bad, err)
		}
	}
	for _, tc := range []struct {
		path string
		want Format
	}{{"out/a.txt", Text}, {"a.JSON", JSON}, {"a.ndjson", JSON}, {"/x/y.srt", SRT}, {"b.vtt", VTT}, {"c.tsv", TSV}} {
		if f, err := FormatForPath(tc.path); err != nil || f != tc.want {
			t.Errorf("FormatForPath(%q) = %v, %v; want %v", tc.path, f, err, tc.want)
		}
		if f, _ := FormatForPath(tc.path); f.Extension() != strings.ToLower(filepath.Ext(tc.path)) && tc.path != "a.ndjson" {
			t.Errorf("%v.Extension() = %q for %q", f, f.Extension(), tc.path)
		}
	}
	for _, bad := range []string{"a.wav", "noext", "dir.srt/"} {
		if _, err := FormatForPath(bad); !errors.Is(err, ErrFormat) {
			t.Errorf("FormatForPath(%q): %v", bad, err)
		}
	}
	for _, tc := range []struct {
		name string
		want Format
	}{{"", OpenAIJSON}, {"json", OpenAIJSON}, {"text", Text}, {"srt", SRT}, {"vtt", VTT}, {"verbose_json", VerboseJSON}} {
		if f, err := ParseResponseFormat(tc.name); err != nil || f != tc.want {
			t.Errorf("ParseResponseFormat(%q) = %v, %v; want %v", tc.name, f, err, tc.want)
		}
	}
	for _, bad := range []string{"tsv", "verbose", "JSON"} {
		if _, err := ParseResponseFormat(bad); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseResponseFormat(%q): %v", bad, err)
		}
	}
	if _, err := NewWriter(&bytes.Buffer{}, Format(99), Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("NewWriter(Format(99)): %v", err)
	}
}

// TestVerboseJSONShape decodes verbose_json into OpenAI's documented
// shape and checks each field.
func TestVerboseJSONShape(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, VerboseJSON, jfk[:2], Options{Info: Info{Task: "translate", Language: "english", Duration: 11}}); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Task     string  `json:"task"`
		Language string  `json:"language"`
		Duration float64 `json:"duration"`
		Text     string  `json:"text"`
		Segments []struct {
			ID, Seek         int
			Start, End       float64
			Text             string
			Tokens           []int
			Temperature      float64
			AvgLogprob       float64 `json:"avg_logprob"`
			CompressionRatio float64 `json:"compression_ratio"`
			NoSpeechProb     float64 `json:"no_speech_prob"`
		} `json:"segments"`
		Words []struct {
			Word       string
			Start, End float64
		} `json:"words"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.Task != "translate" || v.Language != "english" || v.Duration != 11 || len(v.Segments) != 2 || len(v.Words) != 2 {
		t.Fatalf("%+v", v)
	}
	s := v.Segments[1]
	if s.ID != 1 || s.Start != 7.6 || s.End != 10.56 || s.Text != "ask what you can do for your country." || len(s.Tokens) != 4 ||
		s.Temperature != 0.2 || s.AvgLogprob != -0.1 || s.CompressionRatio != 1.1 || s.NoSpeechProb != 0.002 {
		t.Fatalf("segment 1: %+v", s)
	}
	if v.Words[0].Word != "And" || v.Words[1].Start != 0.54 {
		t.Fatalf("words: %+v", v.Words)
	}
	if !strings.HasPrefix(v.Text, "And so my fellow") || strings.Contains(v.Text, "  ") {
		t.Fatalf("text %q", v.Text)
	}
}

// FuzzText: whatever a segment's text holds, JSON stays valid UTF-8 JSON,
// and a WebVTT or SubRip cue stays one text line without "-->".
func FuzzText(f *testing.F) {
	for _, s := range []string{" a --> b", "x\n\ny", "caf\xc3", "\t<b>&amp;</b>", "\u2028\u0085"} {
		f.Add(s, 1.5, 2.25)
	}
	f.Fuzz(func(t *testing.T, text string, start, end float64) {
		segs := []Segment{{Start: start, End: end, Text: text, Words: []Word{{Text: text}}}}
		for _, f := range []Format{JSON, VerboseJSON, OpenAIJSON} {
			var b bytes.Buffer
			if err := Encode(&b, f, segs, Options{}); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b.Bytes()) || !utf8.Valid(b.Bytes()) {
				t.Fatalf("%v: invalid JSON %q", f, b.String())
			}
		}
		for _, f := range []Format{SRT, VTT} {
			var b bytes.Buffer
			if err := Encode(&b, f, segs, Options{}); err != nil {
				t.Fatal(err)
			}
			out := strings.TrimPrefix(b.String(), "WEBVTT\n\n")
			if out == "" {
				continue // no text, no cue
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n")
			cue := lines[len(lines)-1]
			if len(lines) != 2+btoi(f == SRT) || strings.Contains(cue, "-->") || !utf8.ValidString(out) {
				t.Fatalf("%v: %q", f, out)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
