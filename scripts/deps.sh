#!/usr/bin/env bash
# deps.sh checks that the Debian packages Forge's tests and demo need are
# installed. Run as root on Debian it installs the missing ones (and says so);
# anywhere else it prints the exact apt line and fails, because installing
# system packages silently behind a user's back is not ours to do.
set -euo pipefail

# Packages: OpenBLAS (fast SGEMM through purego), espeak-ng (G2P for Kokoro),
# clang (compiles and runs the generated Metal kernels on Linux), npm
# (model artifacts ship as npm packages; forge-server's test runs the
# official openai client on nodejs), nginx (forge-server's scale-out
# test), and flac, lame, vorbis-tools and opus-tools (the tests encode their
# FLAC, MP3, Ogg/Vorbis and Ogg/Opus clips at run time with flac, lame,
# oggenc and opusenc rather than commit them; the Opus clip checks that
# listen names Opus as unsupported). NVRTC (libnvrtc11.2) is not here:
# it is in Debian's non-free component, which is not ours to enable on a
# user's machine; CI enables it, and without it the CUDA compile check
# skips with a reason.
pkgs=(libopenblas0-pthread libespeak-ng1 espeak-ng-data clang nginx flac lame vorbis-tools opus-tools)
if [ "${FORGE_DEPS_EXTRA:-}" != "" ]; then
  # shellcheck disable=SC2206
  pkgs+=(${FORGE_DEPS_EXTRA})
fi

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
      *"install ok installed"*) ;;
      *) missing+=("$p") ;;
    esac
  done
else
  echo "deps: not a Debian system (no dpkg-query); make sure OpenBLAS and espeak-ng are installed" >&2
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi
if ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

line="apt-get install -y ${missing[*]}"
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  # FORGE_DEPS_LOG (make demo) takes apt's and dpkg's output, so the
  # terminal shows one line; the log is printed if the install fails.
  log=${FORGE_DEPS_LOG:-/dev/stderr}
  echo "deps: installing missing Debian packages: ${missing[*]}${FORGE_DEPS_LOG:+ (log: $FORGE_DEPS_LOG)}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; } >>"$log" 2>&1; then
    [ -n "${FORGE_DEPS_LOG:-}" ] && cat "$FORGE_DEPS_LOG" >&2
    echo "deps: installing ${missing[*]} failed" >&2
    exit 1
  fi
  exit 0
fi

echo "deps: missing Debian packages: ${missing[*]}" >&2
echo "deps: install them with:  sudo $line" >&2
exit 1
