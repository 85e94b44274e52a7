// Package all imports every model package for the artifacts it registers
// with the weights package: one line per model. Commands and tests that
// list or fetch every model (cmd/models, `make models`) import it; a
// program that runs a model needs only that model's package, which
// registers its own artifacts.
package all

import (
	_ "github.com/tensorforge/forge/models/kokoro"  // kokoro-v1.0, kokoro-v1.0-int8, kokoro-voices
	_ "github.com/tensorforge/forge/models/vad"     // silero-vad-v6
	_ "github.com/tensorforge/forge/models/whisper" // whisper-tiny, whisper-base, whisper-small
)
