// Package espeak binds the espeak-ng speech synthesizer's text-to-phoneme
// translation through purego (no cgo). Kokoro's text front-end uses it to
// turn text into the IPA phoneme strings the model was trained on.
//
// Only phonemes come out: espeak-ng runs in synchronous mode with no audio
// device. The library is loaded at run time from libespeak-ng.so.1
// (Debian: apt-get install libespeak-ng1 espeak-ng-data) or, on macOS,
// from the Homebrew dylib. FORGE_ESPEAK_LIBRARY names another file;
// ESPEAK_DATA_PATH, read by espeak-ng itself, names another data
// directory.
//
// espeak-ng keeps all of its state in C globals and is not thread-safe, so
// the process holds exactly one [Engine] (see [Default]); its methods
// serialise every call into the library with a mutex and may be used from
// any goroutine.
//
// # Output
//
// Phonemize returns what the phonemizer npm package (used by kokoro-js,
// and so by the golden files) returns: the lines of the phoneme trace
// espeak_Synth writes in IPA mode, one per clause, phonemes unseparated,
// no ties, stress marks ˈ and ˌ just before the stressed vowel, a space
// between words. The trace differs from espeak_TextToPhonemes in
// stress: only synthesis runs the intonation pass that gives a clause
// without primary stress one on its strongest syllable.
//
// # Versions
//
// phonemizer 1.2.1 embeds an espeak-ng master snapshot of spring 2024 (its
// English dictionary is byte-identical to one compiled from commit
// b774a8fd, 2024-03-24). Debian 12's espeak-ng 1.51 gave the same output
// on every text compared (some 15,000) except those holding one of the 25
// English words added to the dictionary since 1.51 (kubernetes, banknote,
// schengen, …; see the g2p tests). espeak-ng 1.52
// (Homebrew, newer distributions) also merges the American FORCE vowel
// into ɔː (four, more, door: oːɹ → ɔːɹ), so its en-us phonemes differ from
// the golden files for such words.
package espeak
