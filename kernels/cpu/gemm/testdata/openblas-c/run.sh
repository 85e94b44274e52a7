#!/usr/bin/env bash
# Compare OpenBLAS called directly from C with the same library called from Go
# through purego (BenchmarkSGEMM/openblas), interleaved so that both see the
# same machine load. THREADS (default: nproc) sets both sides' threads
# (GOMAXPROCS for Go, openblas_set_num_threads for C). Needs gcc and
# libopenblas0-pthread (no headers: the C file declares what it calls).
# Usage: run.sh [rounds] [reps]
set -euo pipefail
rounds=${1:-3}
reps=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
pkg=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
threads=${THREADS:-$(nproc)}
gcc -O2 -o "$tmp/sgemm_bench" "$here/sgemm_bench.c" -l:libopenblas.so.0 -lm
(cd "$pkg" && go test -c -o "$tmp/gemm.test" .)
echo "threads=$threads rounds=$rounds reps=$reps load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  "$tmp/sgemm_bench" "$threads" "$reps" | while read -r shape mean best percpu; do
    echo "C      $shape mean ${mean} GFLOP/s (best rep ${best}), ${percpu} GFLOP/cpu-s"
  done
  (cd "$pkg" && "$tmp/gemm.test" -test.run '^$' -test.bench 'SGEMM/openblas/' -test.benchtime "${reps}x" -test.cpu "$threads") |
    awk '/^BenchmarkSGEMM/ { split($1, p, "/"); sub(/-[0-9]+$/, "", p[3]); w = c = "?"
      for (i = 1; i < NF; i++) { if ($(i+1) == "GFLOP/s") w = $i; if ($(i+1) == "GFLOP/s/cpu-s") c = $i }
      print "purego " p[3] " mean " w " GFLOP/s, " c " GFLOP/cpu-s" }'
done
