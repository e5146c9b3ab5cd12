#!/usr/bin/env bash
# Fuzzes the REST API against its own OpenAPI document with schemathesis (PyPI), once without an API key and
# once with one. Starts `mod serve` on the toy model for each run; run by hand, from a built checkout
# (`npm run build && npm run fixtures`). Prints schemathesis's summary; exits non-zero if either run failed.
# schemathesis.toml beside this script says which declared answers a schema cannot predict, and why.
#
#   scripts/fuzz/schemathesis.sh            # 100 examples per operation and phase
#   MAX_EXAMPLES=20 scripts/fuzz/schemathesis.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${SCHEMATHESIS_VERSION:-4.32.5}
VENV=${VENV:-$ROOT/bench/out/schemathesis-venv}
MAX_EXAMPLES=${MAX_EXAMPLES:-100}
KEY=fuzz-key

if [[ ! -x $VENV/bin/schemathesis ]] || [[ $($VENV/bin/schemathesis --version) != *"$VERSION"* ]]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "schemathesis==$VERSION"
fi
[[ -d $ROOT/dist ]] || { echo "build first: npm run build" >&2; exit 2; }
[[ -f $ROOT/test/fixtures/models/toy/manifest.json ]] || { echo "make the toy model first: npm run fixtures" >&2; exit 2; }
# Without ffmpeg every video request is the server's 500 (a deployment without ffmpeg is broken, not the client's
# fault), which the server-error check would report as a contract failure.
[[ -n ${MOD_FFMPEG:-} ]] || [[ -x $ROOT/node_modules/ffmpeg-static/ffmpeg ]] || command -v ffmpeg >/dev/null ||
  { echo "install ffmpeg first (or set MOD_FFMPEG): the video operations need it" >&2; exit 2; }

WORK=$(mktemp -d)
SERVER=
cleanup() {
  [[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts the server on a free port with the environment given as arguments; sets SERVER and PORT.
# The run checks the contract, not capacity: schemathesis submits video jobs faster than a busy machine runs them
# (one at a time), and a job queue full at the default 64 waiting jobs answers the declared 503 overloaded, which
# the server-error check counts as a failure. So the queue holds more jobs than a run submits (the full queue's
# answer is checked by test/server/openapi-coverage.test.ts). Requests are sent one at a time, so the same limit
# on requests waiting for the model changes nothing else.
start() {
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env MOD_MODEL_DIR="$ROOT/test/fixtures/models/toy" MOD_CACHE_DIR="$WORK/cache" MOD_JOB_STORAGE="$WORK/jobs" \
    MOD_CALLBACK_ALLOW_PRIVATE=true MOD_LOG_LEVEL=warn MOD_QUEUE_LIMIT=100000 "$@" \
    node "$ROOT/bin/run.js" serve --host 127.0.0.1 --port "$PORT" >"$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return
    sleep 0.2
  done
  cat "$WORK/server.log" >&2
  exit 2
}

stop() {
  kill "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  SERVER=
}

# One schemathesis run, every check; its arguments are added to the command.
fuzz() {
  (cd "$WORK" && "$VENV/bin/schemathesis" --config-file "$ROOT/scripts/fuzz/schemathesis.toml" \
    run "http://127.0.0.1:$PORT/openapi.json" --checks all --max-examples "$MAX_EXAMPLES" --generation-deterministic \
    --workers 1 --request-timeout 30 --no-color --warnings off "$@")
}

status=0
echo "== schemathesis $VERSION, $MAX_EXAMPLES examples: without an API key"
start
fuzz || status=1
stop

echo "== schemathesis $VERSION, $MAX_EXAMPLES examples: with MOD_API_KEY"
start MOD_API_KEY=$KEY
fuzz -H "X-API-Key: $KEY" || status=1
stop

echo "== $( ((status == 0)) && echo 'no failures' || echo 'FAILURES (see above)')"
exit $status
