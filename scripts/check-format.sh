#!/usr/bin/env bash
# Fails listing every C++/CUDA source that clang-format (root .clang-format) would change.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | while read -r f; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
if [ -n "$bad" ]; then
  echo "not clang-formatted (run clang-format -i):"; echo "$bad"; exit 1
fi
echo "clang-format: all sources formatted"
