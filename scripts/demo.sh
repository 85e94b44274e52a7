#!/usr/bin/env bash
# demo.sh is `make demo`: speak a sentence into demo.wav with Kokoro, then
# transcribe it back with Whisper, and print both texts side by side.
set -euo pipefail
cd "$(dirname "$0")/.."

text=${FORGE_DEMO_TEXT:-"Forge turns this sentence into speech, and then it listens to the recording and writes it back down."}

mkdir -p bin
go build -o bin/ ./cmd/say ./cmd/listen

./bin/say --scorecard bin/say.scorecard.json -o demo.wav "$text"
heard=$(./bin/listen --model base --scorecard bin/listen.scorecard.json demo.wav)

echo "said:  $text"
echo "heard: $heard"
echo "(audio in demo.wav; scorecards in bin/)"
