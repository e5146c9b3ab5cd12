#!/bin/sh
# Keeps only the onnxruntime-node binaries this container can load: linux, the architecture node runs on.
# The package ships darwin, win32 and every linux architecture (about 240 MB that would never load here).
# Usage: prune-onnxruntime.sh <node_modules folder> [arch, default: node's process.arch]
set -eu
modules="$1"
arch="${2:-$(node -p process.arch)}"
for napi in "$modules"/onnxruntime-node/bin/napi-v*; do
  for platform in "$napi"/*; do
    [ "$(basename "$platform")" = linux ] || rm -rf "$platform"
  done
  for dir in "$napi"/linux/*; do
    [ "$(basename "$dir")" = "$arch" ] || rm -rf "$dir"
  done
  # Fail the build rather than ship an image whose model cannot load.
  [ -f "$napi/linux/$arch/onnxruntime_binding.node" ] || { echo "no onnxruntime binary for linux/$arch in $napi" >&2; exit 1; }
done
