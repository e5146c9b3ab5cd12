#!/bin/sh
# The entry of the pre-commit hook (.pre-commit-hooks.yaml, `language: script`): pre-commit runs it from its own
# clone of this repository at the rev a user's .pre-commit-config.yaml names. The first run installs mod in that
# clone as the GitHub Action does in its checkout (npm ci with install scripts off, the build, the build's tools
# pruned); every run is then `node bin/run.js "$@"` in the user's repository. pre-commit clones each rev once, so
# the install happens once per rev and machine. (`language: node` would install with `npm install -g`, which runs
# every dependency's install script: onnxruntime-node's downloads CUDA libraries.)
set -eu
root=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
stamp="$root/dist/.hook-installed"

install() {
  echo "mod: first run of this hook's rev: installing mod in $root (npm ci, the build)" >&2
  cd "$root"
  # Install scripts stay off; the CPU binaries of onnxruntime-node and sharp ship in their packages.
  npm ci --ignore-scripts --include=dev --no-audit --no-fund >&2
  npm run build >&2
  npm prune --omit=dev --ignore-scripts --no-audit --no-fund >&2
  : > "$stamp"
}

if [ ! -f "$stamp" ]; then
  # Two first runs at once (two repositories committing) share the clone: one installs, the other waits; a lock
  # left by a run that died is taken over.
  lock="$root/.mod-install.lock"
  until mkdir "$lock" 2>/dev/null; do
    holder=$(cat "$lock/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then rm -rf "$lock"; else sleep 1; fi
  done
  echo $$ > "$lock/pid"
  trap 'rm -rf "$lock"' EXIT
  if [ ! -f "$stamp" ]; then (install); fi
  rm -rf "$lock"
  trap - EXIT
fi
exec node "$root/bin/run.js" "$@"
