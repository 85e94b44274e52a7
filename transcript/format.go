package transcript

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is an output format.
type Format uint8

// The formats. Names are those of listen --format; OpenAIJSON is the
// "json" of OpenAI's response_format (ParseResponseFormat).
const (
	// Text is one line per utterance (segments joined), listen's default.
	Text Format = iota + 1
	// JSON is listen's JSON lines: one object per segment,
	// {"start","end","text",["tokens"],"avg_logprob","no_speech_prob",
	// ["language"],["words"]}.
	JSON
	// SRT is SubRip: numbered cues, "hh:mm:ss,mmm --> hh:mm:ss,mmm".
	SRT
	// VTT is WebVTT: "WEBVTT", then cues "hh:mm:ss.mmm --> hh:mm:ss.mmm".
	VTT
	// TSV is whisper-cli's: a "start\tend\ttext" header, then times in
	// whole milliseconds.
	TSV
	// Verbose is whisper-cli's console form:
	// "[hh:mm:ss.mmm --> hh:mm:ss.mmm] text" lines.
	Verbose
	// OpenAIJSON is OpenAI's json response: {"text": "..."}.
	OpenAIJSON
	// VerboseJSON is OpenAI's verbose_json response: task, language,
	// duration, text, segments and, when any segment has them, words.
	VerboseJSON
)

var formatNames = [...]string{Text: "text", JSON: "json", SRT: "srt", VTT: "vtt", TSV: "tsv", Verbose: "verbose", OpenAIJSON: "openai_json", VerboseJSON: "verbose_json"}

// String returns the name ParseFormat takes.
func (f Format) String() string {
	if f >= Text && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Extension returns the usual file extension of f, with its dot: ".txt",
// ".json", ".srt", ".vtt", ".tsv"; Verbose writes ".txt", and OpenAIJSON and
// VerboseJSON ".json".
func (f Format) Extension() string {
	switch f {
	case JSON, OpenAIJSON, VerboseJSON:
		return ".json"
	case SRT:
		return ".srt"
	case VTT:
		return ".vtt"
	case TSV:
		return ".tsv"
	}
	return ".txt"
}

// ContentType returns the HTTP media type of f, as OpenAI serves them.
func (f Format) ContentType() string {
	switch f {
	case OpenAIJSON, VerboseJSON:
		return "application/json"
	case JSON:
		return "application/x-ndjson"
	case SRT:
		return "application/x-subrip; charset=utf-8"
	case VTT:
		return "text/vtt; charset=utf-8"
	case TSV:
		return "text/tab-separated-values; charset=utf-8"
	}
	return "text/plain; charset=utf-8"
}

// ErrFormat: a name or file extension names no format.
var ErrFormat = errors.New("unknown transcript format")

// ParseFormat returns the format named name (case-insensitive): text (or
// txt), json, srt, vtt, tsv, verbose, verbose_json, openai_json.
func ParseFormat(name string) (Format, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "txt" {
		return Text, nil
	}
	for f, s := range formatNames {
		if s != "" && s == n {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want text, json, srt, vtt, tsv, verbose or verbose_json)", ErrFormat, name)
}

// FormatForPath picks the format from a file name's extension
// (case-insensitive): .txt text, .json json, .srt, .vtt, .tsv.
func FormatForPath(path string) (Format, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".txt", ".text":
		return Text, nil
	case ".json", ".jsonl", ".ndjson":
		return JSON, nil
	case ".srt":
		return SRT, nil
	case ".vtt":
		return VTT, nil
	case ".tsv":
		return TSV, nil
	}
	if ext == "" {
		return 0, fmt.Errorf("%w: %q has no extension (want .txt, .json, .srt, .vtt or .tsv)", ErrFormat, path)
	}
	return 0, fmt.Errorf("%w: extension %q of %q (want .txt, .json, .srt, .vtt or .tsv)", ErrFormat, ext, path)
}

// ParseResponseFormat maps OpenAI's response_format (json, text, srt, vtt,
// verbose_json; "" means json) to a Format; its "json" is OpenAIJSON.
func ParseResponseFormat(name string) (Format, error) {
	switch name {
	case "", "json":
		return OpenAIJSON, nil
	case "text":
		return Text, nil
	case "srt":
		return SRT, nil
	case "vtt":
		return VTT, nil
	case "verbose_json":
		return VerboseJSON, nil
	}
	return 0, fmt.Errorf("%w: response_format %q (want json, text, srt, vtt or verbose_json)", ErrFormat, name)
}
