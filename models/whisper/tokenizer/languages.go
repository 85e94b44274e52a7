package tokenizer

// Language is one language that a multilingual Whisper vocabulary has a
// token for.
type Language struct {
	Code string // ISO 639-1 where one exists: "en", "de", "haw", …
	Name string // English name, lower case: "english", "german", …
	ID   int32  // the token <|code|>
}

// languageTable lists Whisper's languages in the order of their tokens
// (<|en|> is the token after <|startoftranscript|>). Vocabularies of the
// first Whisper releases, tiny to large-v2, stop before "yue".
var languageTable = [...]struct{ code, name string }{
	{"en", "english"}, {"zh", "chinese"}, {"de", "german"}, {"es", "spanish"},
	{"ru", "russian"}, {"ko", "korean"}, {"fr", "french"}, {"ja", "japanese"},
	{"pt", "portuguese"}, {"tr", "turkish"}, {"pl", "polish"}, {"ca", "catalan"},
	{"nl", "dutch"}, {"ar", "arabic"}, {"sv", "swedish"}, {"it", "italian"},
	{"id", "indonesian"}, {"hi", "hindi"}, {"fi", "finnish"}, {"vi", "vietnamese"},
	{"he", "hebrew"}, {"uk", "ukrainian"}, {"el", "greek"}, {"ms", "malay"},
	{"cs", "czech"}, {"ro", "romanian"}, {"da", "danish"}, {"hu", "hungarian"},
	{"ta", "tamil"}, {"no", "norwegian"}, {"th", "thai"}, {"ur", "urdu"},
	{"hr", "croatian"}, {"bg", "bulgarian"}, {"lt", "lithuanian"}, {"la", "latin"},
	{"mi", "maori"}, {"ml", "malayalam"}, {"cy", "welsh"}, {"sk", "slovak"},
	{"te", "telugu"}, {"fa", "persian"}, {"lv", "latvian"}, {"bn", "bengali"},
	{"sr", "serbian"}, {"az", "azerbaijani"}, {"sl", "slovenian"}, {"kn", "kannada"},
	{"et", "estonian"}, {"mk", "macedonian"}, {"br", "breton"}, {"eu", "basque"},
	{"is", "icelandic"}, {"hy", "armenian"}, {"ne", "nepali"}, {"mn", "mongolian"},
	{"bs", "bosnian"}, {"kk", "kazakh"}, {"sq", "albanian"}, {"sw", "swahili"},
	{"gl", "galician"}, {"mr", "marathi"}, {"pa", "punjabi"}, {"si", "sinhala"},
	{"km", "khmer"}, {"sn", "shona"}, {"yo", "yoruba"}, {"so", "somali"},
	{"af", "afrikaans"}, {"oc", "occitan"}, {"ka", "georgian"}, {"be", "belarusian"},
	{"tg", "tajik"}, {"sd", "sindhi"}, {"gu", "gujarati"}, {"am", "amharic"},
	{"yi", "yiddish"}, {"lo", "lao"}, {"uz", "uzbek"}, {"fo", "faroese"},
	{"ht", "haitian creole"}, {"ps", "pashto"}, {"tk", "turkmen"}, {"nn", "nynorsk"},
	{"mt", "maltese"}, {"sa", "sanskrit"}, {"lb", "luxembourgish"}, {"my", "myanmar"},
	{"bo", "tibetan"}, {"tl", "tagalog"}, {"mg", "malagasy"}, {"as", "assamese"},
	{"tt", "tatar"}, {"haw", "hawaiian"}, {"ln", "lingala"}, {"ha", "hausa"},
	{"ba", "bashkir"}, {"jw", "javanese"}, {"su", "sundanese"}, {"yue", "cantonese"},
}

// languageAliases are other names OpenAI's command line accepts.
var languageAliases = map[string]string{
	"burmese": "my", "valencian": "ca", "flemish": "nl", "haitian": "ht",
	"letzeburgesch": "lb", "pushto": "ps", "panjabi": "pa", "moldavian": "ro",
	"moldovan": "ro", "sinhalese": "si", "castilian": "es", "mandarin": "zh",
}
