#!/usr/bin/env bash
# pack.sh builds what a session carries to the lent GPU machine, which has
# no Go toolchain and takes 64 MiB a call: the e2e and kernels/cuda test
# binaries of each revision named (xz-compressed), and Kokoro's int8
# artifact (its converted safetensors, 61 MiB compressed) in two parts, so
# that two calls to one warm machine carry it.
#
#   scripts/gpu/pack.sh REV...        (default: HEAD)
#
# It writes two ignored folders, each with the script its call runs:
#   gpucarry/   the binaries, the artifact's first part, its manifest and
#               run1.sh: unpack everything into /tmp and run each
#               revision's kernels/cuda tests ($OUT/cuda_REV.txt);
#   gpucarry3/  Whisper tiny and Silero VAD from the model cache, jfk and
#               the golden clips, and run3.sh: the GPU's Whisper tests on the
#               last revision, BenchmarkGPUWhisper and BenchmarkGPUBatch on
#               every revision in interleaved rounds, and the PyTorch peer
#               (scripts/peers/whisper_torch.py) in the same call;
#   gpucarry2/  the artifact's second part and run2.sh: join the artifact,
#               run TestGPUKokoro and TestGPUProfileKokoro on the last
#               revision, BenchmarkGPUKokoro on every revision in
#               interleaved rounds (a rerun of one binary is not a peer),
#               and a CPU profile and an execution trace of the last
#               revision's paragraph ($OUT/kokoro_REV.cpu.prof, .trace).
# PACK_VARIANTS lists environment settings under which the last revision
# also runs in each benchmark round, each one a variant (a backend switch
# that turns one change off, so one build measures it):
#   PACK_VARIANTS="FORGE_CUDA_LSTM_CLUSTER=off FORGE_CUDA_CONV_IGEMM=off" \
#     scripts/gpu/pack.sh main gpu-next
# Then, from the repository root, with the device tool:
#   run "bash gpucarry/run1.sh"  carry ["gpucarry"]
#   run "bash gpucarry2/run2.sh" carry ["gpucarry2"]   (within the 30 s the
#                                machine stays warm)
#   run "bash gpucarry3/run3.sh" carry ["gpucarry3"]   (the same machine:
#                                it runs run1's binaries)
# Revisions are built in temporary worktrees; nothing is committed. The
# binaries are stripped (-s -w: about 5 MB a revision compressed, so up to
# five revisions go with the artifact's 32 MB part); to read a CPU profile
# made there, build the same revision here unstripped.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(HEAD)

models=${FORGE_MODELS:-$HOME/.cache/forge/models}
art=$models/kokoro-v1.0-int8
if [ ! -f "$art/kokoro-v1.0-int8.safetensors" ]; then
  echo "pack.sh: $art has no converted safetensors: run 'go run ./cmd/models fetch kokoro-v1.0-int8' first" >&2
  exit 2
fi

rm -rf gpucarry gpucarry2 gpucarry3
mkdir -p gpucarry gpucarry2 gpucarry3/shared/data gpucarry3/shared/golden
names=()
for rev in "${revs[@]}"; do
  name=$(git rev-parse --short "$rev")
  names+=("$name")
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$rev"
  (cd "$wt/e2e" && go test -c -ldflags="-s -w" -o "$root/gpucarry/e2e_$name.test" .)
  (cd "$wt/kernels/cuda" && go test -c -ldflags="-s -w" -o "$root/gpucarry/cuda_$name.test" .)
  git worktree remove --force "$wt"
done
xz -T0 -6 gpucarry/*.test

xz -T0 -6 -c "$art/kokoro-v1.0-int8.safetensors" | split -b 32000000 -d -a 1 - gpucarry/kokoro.xz.
mv gpucarry/kokoro.xz.1 gpucarry2/
if [ -e gpucarry/kokoro.xz.2 ]; then
  echo "pack.sh: the compressed artifact needs more than two parts" >&2
  exit 2
fi
cp "$art/manifest.json" gpucarry/

cat >gpucarry/run1.sh <<EOF
#!/bin/bash
# Written by scripts/gpu/pack.sh for ${names[*]}.
nvidia-smi --query-gpu=name,driver_version --format=csv
for f in gpucarry/*.test.xz; do b=\$(basename \$f .xz); xz -dc \$f >/tmp/\$b && chmod +x /tmp/\$b; done
mkdir -p /tmp/kokoro && cp gpucarry/kokoro.xz.0 gpucarry/manifest.json /tmp/kokoro/
cd kernels/cuda
for n in ${names[*]}; do
  echo "== kernels/cuda tests, \$n"
  /tmp/cuda_\$n.test -test.count=1 -test.v >\$OUT/cuda_\$n.txt 2>&1
  grep -E '^(--- FAIL|FAIL|ok|PASS)' \$OUT/cuda_\$n.txt | head -20
done
EOF

last=${names[${#names[@]}-1]}
cat >gpucarry2/run2.sh <<EOF
#!/bin/bash
# Written by scripts/gpu/pack.sh for ${names[*]}.
[ -f /tmp/kokoro/kokoro.xz.0 ] || { echo "run gpucarry/run1.sh first, on the same machine"; exit 3; }
cat /tmp/kokoro/kokoro.xz.0 gpucarry2/kokoro.xz.1 | xz -dc >/tmp/kokoro/kokoro-v1.0-int8.safetensors
export FORGE_KOKORO_SAFETENSORS=/tmp/kokoro/kokoro-v1.0-int8.safetensors
cd e2e
echo "== TestGPUKokoro, $last"
/tmp/e2e_$last.test -test.run 'TestGPUKokoro\$' -test.v -test.count=1 2>&1 | grep -E 'weights|paragraph|^---|^ok|FAIL|SKIP'
for r in 1 2; do
  for n in ${names[*]}; do
    echo "== \$n, round \$r"
    /tmp/e2e_\$n.test -test.run XXX -test.bench GPUKokoro -test.benchtime 10x 2>&1 | grep -E 'Benchmark|FAIL'
  done
  for v in ${PACK_VARIANTS:-}; do
    echo "== $last with \$v, round \$r"
    env \$v /tmp/e2e_$last.test -test.run XXX -test.bench GPUKokoro -test.benchtime 10x 2>&1 | grep -E 'Benchmark|FAIL'
  done
done
FORGE_CUDA_PROFILE=1 /tmp/e2e_$last.test -test.run TestGPUProfileKokoro -test.v -test.count=1 >\$OUT/kokoro_profile.txt 2>&1
grep -E 'in all|device time' \$OUT/kokoro_profile.txt
# The host's share of the paragraph: a CPU profile and an execution trace
# (waits on the device show as the goroutine blocked in its driver call),
# read here with an unstripped build of $last (go tool pprof / go tool trace).
/tmp/e2e_$last.test -test.run XXX -test.bench 'GPUKokoro/f16/paragraph' -test.benchtime 20x -test.cpuprofile \$OUT/kokoro_$last.cpu.prof >/dev/null 2>&1
/tmp/e2e_$last.test -test.run XXX -test.bench 'GPUKokoro/f16/paragraph' -test.benchtime 3x -test.trace \$OUT/kokoro_$last.trace >/dev/null 2>&1
ls -l \$OUT
EOF
for id in whisper-tiny silero-vad-v6; do
  [ -f "$models/$id/verified.json" ] || { echo "pack.sh: $models/$id is not in the cache: run 'go run ./cmd/models fetch $id' first" >&2; exit 2; }
done
tar -C "$models" -cf - --exclude=derived whisper-tiny silero-vad-v6 | xz -T0 -6 >gpucarry3/models.tar.xz
shared=${FORGE_SHARED:-$root/../shared}
cp "$shared/data/jfk.wav" gpucarry3/shared/data/
cp -r "$shared/golden/audio" gpucarry3/shared/golden/

cat >gpucarry3/run3.sh <<EOF
#!/bin/bash
# Written by scripts/gpu/pack.sh for ${names[*]}.
[ -x /tmp/e2e_$last.test ] || { echo "run gpucarry/run1.sh first, on the same machine"; exit 3; }
mkdir -p /tmp/models && xz -dc gpucarry3/models.tar.xz | tar -x -C /tmp/models
export FORGE_MODELS=/tmp/models FORGE_SHARED=\$PWD/gpucarry3/shared
# Builds older than FORGE_SHARED read ../shared beside the checkout.
[ -e ../shared ] || ln -s "\$PWD/gpucarry3/shared" ../shared 2>/dev/null || echo "(../shared not writable: older builds skip what reads it)"
root=\$PWD
cd e2e
echo "== Whisper and VAD tests, $last"
/tmp/e2e_$last.test -test.run 'TestGPUGoldenTokens|TestGPUWhisperVAD|TestGPUBatch\$|TestGPUFusedDecoder' -test.v -test.count=1 >\$OUT/whisper_tests.txt 2>&1
grep -E '^(--- |ok|FAIL)|tokens equal|SKIP' \$OUT/whisper_tests.txt
for r in 1 2; do
  for n in ${names[*]}; do
    echo "== \$n, round \$r"
    /tmp/e2e_\$n.test -test.run XXX -test.bench 'GPUWhisper/f16/(encode|step|transcribe)\$' -test.benchtime 200x 2>&1 | grep -E 'Benchmark|FAIL'
    /tmp/e2e_\$n.test -test.run XXX -test.bench 'GPUBatch/f16' -test.benchtime 5x 2>&1 | grep -E 'Benchmark|FAIL'
  done
done
cd \$root
echo "== PyTorch peer"
python3 scripts/peers/whisper_torch.py tiny 2>&1 | tail -20
EOF
du -sh gpucarry gpucarry2 gpucarry3
