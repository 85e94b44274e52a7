// Package espeak binds the espeak-ng speech synthesizer's text-to-phoneme
// translation through purego (no cgo). Kokoro's text front-end uses it to
// turn English text into the IPA phoneme strings the model was trained on.
//
// Only phonemisation is exposed: espeak-ng is initialised in synchronous
// mode and never produces audio. The library is loaded at run time from
// libespeak-ng.so.1 (Debian: apt-get install libespeak-ng1 espeak-ng-data)
// or, on macOS, from the Homebrew dylib. FORGE_ESPEAK_LIBRARY names another
// file; ESPEAK_DATA_PATH, read by espeak-ng itself, names another data
// directory.
//
// espeak-ng keeps all of its state in C globals and is not thread-safe, so
// the process holds exactly one [Engine] (see [Default]); its methods
// serialise every call into the library with a mutex and may be used from
// any goroutine.
//
// The output mirrors what the phonemizer npm package (used by kokoro-js)
// returns: one IPA string per espeak clause, phonemes unseparated, no ties,
// stress marks ˈ and ˌ before the stressed syllable's vowel, and a space
// between words.
package espeak
