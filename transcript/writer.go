package transcript

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Options tune a Writer.
type Options struct {
	// Tokens adds each segment's token ids to the JSON format (listen
	// --tokens). verbose_json always has them.
	Tokens bool
	// Info is what verbose_json reports of the whole transcript; Writer.
	// SetInfo replaces it before Close when it is known only then.
	Info Info
}

// ErrClosed: Write or Close after Close.
var ErrClosed = errors.New("transcript writer is closed")

// Writer writes segments in one format as they become final. Text, JSON,
// SRT, VTT, TSV and Verbose write each segment at once (Text a line per
// utterance); OpenAIJSON and VerboseJSON keep the segments and write at
// Close. Close must be called. A Writer is not safe for concurrent use.
type Writer struct {
	w      *bufio.Writer
	format Format
	opts   Options
	n      int       // segments written
	cues   int       // SRT/VTT cues written (empty segments make none)
	line   []Segment // Text: the utterance so far
	all    []Segment // OpenAIJSON, VerboseJSON: everything
	closed bool
}

// NewWriter returns a Writer of format f to w.
func NewWriter(w io.Writer, f Format, opts Options) (*Writer, error) {
	if f < Text || f > VerboseJSON {
		return nil, fmt.Errorf("%w: %v", ErrFormat, f)
	}
	return &Writer{w: bufio.NewWriter(w), format: f, opts: opts}, nil
}

// SetInfo replaces Options.Info (for verbose_json), before Close.
func (w *Writer) SetInfo(info Info) { w.opts.Info = info }

// Write writes segs, flushing the output after them so that a reader of a
// pipe sees each segment when it is final.
func (w *Writer) Write(segs ...Segment) error {
	if w.closed {
		return ErrClosed
	}
	for _, s := range segs {
		if err := w.write(s); err != nil {
			return fmt.Errorf("transcript: writing %v: %w", w.format, err)
		}
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("transcript: writing %v: %w", w.format, err)
	}
	return nil
}

func (w *Writer) write(s Segment) error {
	defer func() { w.n++ }()
	text := cleanText(s.Text)
	switch w.format {
	case Text:
		w.line = append(w.line, s)
		if s.EndsUtterance {
			return w.endLine()
		}
		return nil
	case JSON:
		return w.writeJSONLine(s, text)
	case SRT:
		if text == "" {
			return nil // a cue of no text ends at its timing line
		}
		w.cues++
		_, err := fmt.Fprintf(w.w, "%d\n%s --> %s\n%s\n\n", w.cues, clock(s.Start, ','), clock(max(s.End, s.Start), ','), srtText(text))
		return err
	case VTT:
		if w.n == 0 {
			if _, err := w.w.WriteString("WEBVTT\n\n"); err != nil {
				return err
			}
		}
		if text == "" {
			return nil
		}
		w.cues++
		_, err := fmt.Fprintf(w.w, "%s --> %s\n%s\n\n", clock(s.Start, '.'), clock(max(s.End, s.Start), '.'), vttText(text))
		return err
	case TSV:
		if w.n == 0 {
			if _, err := w.w.WriteString("start\tend\ttext\n"); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w.w, "%d\t%d\t%s\n", millis(s.Start), millis(max(s.End, s.Start)), text) // cleanText made tabs spaces
		return err
	case Verbose:
		_, err := fmt.Fprintf(w.w, "[%s --> %s] %s\n", clock(s.Start, '.'), clock(max(s.End, s.Start), '.'), text)
		return err
	}
	w.all = append(w.all, s)
	return nil
}

// endLine writes the Text format's pending utterance as one line.
func (w *Writer) endLine() error {
	text := Join(w.line)
	w.line = w.line[:0]
	if text == "" {
		return nil
	}
	_, err := fmt.Fprintln(w.w, text)
	return err
}

// jsonWord is a word in listen's JSON lines (openai-whisper's
// word_timestamps shape).
type jsonWord struct {
	Word        string  `json:"word"`
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
	Probability float64 `json:"probability"`
}

// writeJSONLine writes one segment of listen's JSON lines. The fields and
// their order up to no_speech_prob are listen's contract since its first
// --json; language and words came later, and are left out when unknown.
func (w *Writer) writeJSONLine(s Segment, text string) error {
	seg := struct {
		Start        float64    `json:"start"`
		End          float64    `json:"end"`
		Text         string     `json:"text"`
		Tokens       []int32    `json:"tokens,omitempty"`
		AvgLogProb   float64    `json:"avg_logprob"`
		NoSpeechProb float64    `json:"no_speech_prob"`
		Language     string     `json:"language,omitempty"`
		Words        []jsonWord `json:"words,omitempty"`
	}{Start: seconds3(s.Start), End: seconds3(s.End), Text: text,
		AvgLogProb: finite(s.AvgLogProb), NoSpeechProb: finite(s.NoSpeechProb), Language: s.Language}
	if w.opts.Tokens {
		seg.Tokens = s.Tokens
	}
	for _, wd := range s.Words {
		seg.Words = append(seg.Words, jsonWord{Word: cleanText(wd.Text), Start: seconds3(wd.Start), End: seconds3(wd.End), Probability: finite(wd.Probability)})
	}
	return json.NewEncoder(w.w).Encode(seg)
}

// Close writes what is pending (the Text format's last line; the whole of
// OpenAIJSON and VerboseJSON; a WebVTT header when no cue came) and
// flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	var err error
	switch w.format {
	case Text:
		err = w.endLine()
	case VTT:
		if w.n == 0 {
			_, err = w.w.WriteString("WEBVTT\n\n")
		}
	case TSV:
		if w.n == 0 {
			_, err = w.w.WriteString("start\tend\ttext\n")
		}
	case OpenAIJSON:
		err = json.NewEncoder(w.w).Encode(struct {
			Text string `json:"text"`
		}{Join(w.all)})
	case VerboseJSON:
		err = w.writeVerboseJSON()
	}
	if err == nil {
		err = w.w.Flush()
	}
	if err != nil {
		return fmt.Errorf("transcript: writing %v: %w", w.format, err)
	}
	return nil
}

// verboseSegment is a segment of OpenAI's verbose_json.
type verboseSegment struct {
	ID               int     `json:"id"`
	Seek             int     `json:"seek"`
	Start            float64 `json:"start"`
	End              float64 `json:"end"`
	Text             string  `json:"text"`
	Tokens           []int32 `json:"tokens"`
	Temperature      float64 `json:"temperature"`
	AvgLogProb       float64 `json:"avg_logprob"`
	CompressionRatio float64 `json:"compression_ratio"`
	NoSpeechProb     float64 `json:"no_speech_prob"`
}

// verboseWord is a word of OpenAI's verbose_json.
type verboseWord struct {
	Word  string  `json:"word"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// writeVerboseJSON writes OpenAI's verbose_json of every segment.
func (w *Writer) writeVerboseJSON() error {
	info := w.opts.Info
	v := struct {
		Task     string           `json:"task"`
		Language string           `json:"language"`
		Duration float64          `json:"duration"`
		Text     string           `json:"text"`
		Segments []verboseSegment `json:"segments"`
		Words    []verboseWord    `json:"words,omitempty"`
	}{Task: info.Task, Language: info.Language, Duration: seconds3(info.Duration), Text: Join(w.all), Segments: []verboseSegment{}}
	if v.Task == "" {
		v.Task = "transcribe"
	}
	for _, s := range w.all {
		if v.Language == "" {
			v.Language = s.Language
		}
		if info.Duration == 0 {
			v.Duration = max(v.Duration, seconds3(s.End))
		}
		tokens := s.Tokens
		if tokens == nil {
			tokens = []int32{}
		}
		v.Segments = append(v.Segments, verboseSegment{ID: s.ID, Seek: s.Seek, Start: seconds3(s.Start), End: seconds3(s.End),
			Text: cleanText(s.Text), Tokens: tokens, Temperature: finite(s.Temperature), AvgLogProb: finite(s.AvgLogProb),
			CompressionRatio: finite(s.CompressionRatio), NoSpeechProb: finite(s.NoSpeechProb)})
		for _, wd := range s.Words {
			v.Words = append(v.Words, verboseWord{Word: cleanText(wd.Text), Start: seconds3(wd.Start), End: seconds3(wd.End)})
		}
	}
	return json.NewEncoder(w.w).Encode(v)
}

// Encode writes a whole transcript in format f: NewWriter, Write, Close.
func Encode(w io.Writer, f Format, segs []Segment, opts Options) error {
	tw, err := NewWriter(w, f, opts)
	if err != nil {
		return err
	}
	if err := tw.Write(segs...); err != nil {
		return err
	}
	return tw.Close()
}

// clock formats seconds as hh:mm:ss<sep>mmm. Hours take two digits, more
// when a time reaches 100 hours; they never wrap.
func clock(sec float64, sep byte) string {
	ms := millis(sec)
	return fmt.Sprintf("%02d:%02d:%02d%c%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// srtText keeps a SubRip cue's text from reading as a timing line.
// SubRip has no escapes, so "-->" becomes "->", until none is left ("--->"
// would otherwise become "-->").
func srtText(s string) string {
	for strings.Contains(s, "-->") {
		s = strings.ReplaceAll(s, "-->", "->")
	}
	return s
}

// vttText escapes a WebVTT cue's text: "&" and "<" always, and ">" so
// that "-->" cannot appear.
func vttText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
