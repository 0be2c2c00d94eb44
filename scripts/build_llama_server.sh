#!/usr/bin/env bash
# Build llama.cpp's `llama-server` from the source that the installed llama-cpp-python vendors (its
# PyPI sdist: no other download) and put it at $1 (default .venv/bin/llama-server).
#
# Why a server: llama-cpp-python serialises every call behind one llama.cpp context; the server
# decodes several sequences per step (continuous batching over N slots), keeps each slot's KV cache
# for the next prompt with the same prefix, and takes a draft model for speculative decoding.
# citegraph starts it as a managed loopback subprocess (citegraph/tools/models/server.py).
#
# The binary is cached per llama-cpp-python version and build flags under
# ${CITEGRAPH_CACHE:-~/.cache/citegraph}, so a fresh clone on the same machine copies it (seconds)
# instead of compiling again (~6 min on 2 cores).
set -euo pipefail
PY="${PYTHON:-.venv/bin/python}"
DEST="${1:-.venv/bin/llama-server}"
CMAKE_FLAGS="${LLAMA_SERVER_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF}"
VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')"
KEY="$(printf '%s %s' "$VERSION" "$CMAKE_FLAGS" | sha256sum | cut -c1-12)"
CACHE="${CITEGRAPH_CACHE:-$HOME/.cache/citegraph}/llama-server-$VERSION-$KEY"

if [ ! -x "$CACHE/llama-server" ]; then
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  echo "building llama-server $VERSION from llama-cpp-python's vendored llama.cpp (once per machine, ~6 min on 2 cores)"
  "$PY" -m pip download -q --no-deps --no-binary :all: -d "$WORK" "llama-cpp-python==$VERSION"
  tar -xzf "$WORK"/llama_cpp_python-*.tar.gz -C "$WORK"
  SRC="$(echo "$WORK"/llama_cpp_python-*/vendor/llama.cpp)"
  # shellcheck disable=SC2086 # CMAKE_FLAGS is a list of flags
  cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    $CMAKE_FLAGS -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_APP=OFF >"$WORK/configure.log" 2>&1 || { tail -30 "$WORK/configure.log"; exit 1; }
  cmake --build "$WORK/build" --target llama-server -j "$(nproc)" >"$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log"; exit 1; }
  mkdir -p "$CACHE"
  cp "$WORK/build/bin/llama-server" "$CACHE/llama-server.tmp" && mv "$CACHE/llama-server.tmp" "$CACHE/llama-server"
fi
mkdir -p "$(dirname "$DEST")"
cp "$CACHE/llama-server" "$DEST.tmp" && mv "$DEST.tmp" "$DEST"
echo "llama-server $VERSION at $DEST"
