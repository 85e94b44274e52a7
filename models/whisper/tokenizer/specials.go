package tokenizer

import (
	"fmt"
	"strings"
)

// Timestamps is the number of timestamp tokens: <|0.00|> to <|30.00|> in
// steps of TimePrecision.
const Timestamps = 1501

// TimePrecision is the time step of timestamp tokens, in seconds: one
// encoder output frame.
const TimePrecision = 0.02

// Task is what the decoder is asked to do with the speech.
type Task int

const (
	// Transcribe writes the speech down in its own language.
	Transcribe Task = iota
	// Translate writes it down in English.
	Translate
)

// String returns the task's name as Whisper's options spell it.
func (t Task) String() string {
	switch t {
	case Transcribe:
		return "transcribe"
	case Translate:
		return "translate"
	}
	return fmt.Sprintf("Task(%d)", int(t))
}

// Specials holds the ids of the tokens that steer Whisper's decoder. It is a
// plain value so that decoding code can be tested with a made-up vocabulary.
type Specials struct {
	EOT         int32 // <|endoftext|>
	SOT         int32 // <|startoftranscript|>
	Translate   int32 // <|translate|>
	Transcribe  int32 // <|transcribe|>
	StartOfLM   int32 // <|startoflm|>
	StartOfPrev int32 // <|startofprev|>: precedes the previous-text prompt
	// NoSpeech is <|nospeech|>, or <|nocaptions|> in the first releases'
	// vocabularies; -1 when there is neither.
	NoSpeech     int32
	NoTimestamps int32 // <|notimestamps|>
	// TimestampBegin is <|0.00|>; timestamp t is TimestampBegin+round(t/0.02)
	// and every id from TimestampBegin on is a timestamp.
	TimestampBegin int32
	Space          int32 // the token of " ", suppressed at the first position
	// Languages lists the language tokens in id order; it is empty for an
	// English-only vocabulary.
	Languages []Language
}

// IsTimestamp reports whether id is a timestamp token.
func (s *Specials) IsTimestamp(id int32) bool { return id >= s.TimestampBegin }

// Language finds a language by code ("de") or English name ("german", any
// case) and returns it with its token id.
func (s *Specials) Language(codeOrName string) (Language, error) {
	key := strings.ToLower(strings.TrimSpace(codeOrName))
	if alias, ok := languageAliases[key]; ok {
		key = alias
	}
	for _, l := range s.Languages {
		if l.Code == key || l.Name == key {
			return l, nil
		}
	}
	if len(s.Languages) == 0 {
		return Language{}, fmt.Errorf("language %q: this vocabulary is English-only and has no language tokens", codeOrName)
	}
	return Language{}, fmt.Errorf("unknown language %q (want a code such as en, de, ja, or a name such as german)", codeOrName)
}

// LanguageOf returns the language whose token is id.
func (s *Specials) LanguageOf(id int32) (Language, bool) {
	for _, l := range s.Languages {
		if l.ID == id {
			return l, true
		}
	}
	return Language{}, false
}

// SOTSequence returns the tokens that start a transcript:
// <|startoftranscript|><|lang|><|task|> for a multilingual vocabulary, or
// <|startoftranscript|> alone for an English-only one, followed by
// <|notimestamps|> when timestamps is false. language is a code or a name;
// an English-only vocabulary accepts "", "en" and "english" only.
func (s *Specials) SOTSequence(language string, task Task, timestamps bool) ([]int32, error) {
	seq := []int32{s.SOT}
	if len(s.Languages) > 0 {
		l, err := s.Language(language)
		if err != nil {
			return nil, err
		}
		switch task {
		case Transcribe:
			seq = append(seq, l.ID, s.Transcribe)
		case Translate:
			seq = append(seq, l.ID, s.Translate)
		default:
			return nil, fmt.Errorf("unknown task %v", task)
		}
	} else {
		switch strings.ToLower(language) {
		case "", "en", "english":
		default:
			return nil, fmt.Errorf("language %q: this vocabulary is English-only", language)
		}
		if task != Transcribe {
			return nil, fmt.Errorf("task %v: an English-only vocabulary can only transcribe", task)
		}
	}
	if !timestamps {
		seq = append(seq, s.NoTimestamps)
	}
	return seq, nil
}
