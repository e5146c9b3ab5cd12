// The container: only the onnxruntime binaries of its own platform, the system layer (ffmpeg, tini) before
// any application file, tini as PID 1, a Node LTS base. Docker itself is not run here (no daemon, no pulls).
import {execFile} from 'node:child_process'
import {mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join, relative} from 'node:path'
import {promisify} from 'node:util'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT} from '../helpers/cli.js'
import {tempDir} from './harness.js'

const run = promisify(execFile)
const PRUNE = join(ROOT, 'scripts', 'docker', 'prune-onnxruntime.sh')
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
const dir = tempDir('mod-server-container-')

/** Every file under `root`, relative to it. */
const filesUnder = (root: string) =>
  readdirSync(root, {recursive: true, withFileTypes: true})
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))

test.after(() => dir.remove())

/** A node_modules with onnxruntime-node's layout: bin/napi-v6/<platform>/<arch>/ files. */
function fakeModules(name: string): string {
  const modules = join(dir.path, name)
  for (const platform of ['darwin/arm64', 'darwin/x64', 'win32/x64', 'win32/arm64', 'linux/x64', 'linux/arm64']) {
    const folder = join(modules, 'onnxruntime-node', 'bin', 'napi-v6', platform)
    mkdirSync(folder, {recursive: true})
    writeFileSync(join(folder, 'onnxruntime_binding.node'), 'binary')
  }
  return modules
}

test('the prune step keeps the binaries of linux on the given architecture only', async () => {
  const modules = fakeModules('x64')
  await run('sh', [PRUNE, modules, 'x64'])
  assert.equal(filesUnder(modules), ['onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node'])
})

test('the prune step fails the build when no binary fits the architecture', async () => {
  const modules = fakeModules('riscv')
  const failure = await run('sh', [PRUNE, modules, 'riscv64']).then(
    () => undefined,
    (e: {code: number; stderr: string}) => [e.code, e.stderr.trim()],
  )
  assert.equal(failure, [1, `no onnxruntime binary for linux/riscv64 in ${modules}/onnxruntime-node/bin/napi-v6`])
})

/** The instructions of one stage, by its name. */
function stage(name: string): string {
  const m = new RegExp(`^FROM \\S+ AS ${name}\\n([\\s\\S]*?)(?=^FROM |(?![\\s\\S]))`, 'm').exec(dockerfile)
  assert.ok(m, `stage ${name}`)
  return m[1]
}

test('the image: Node LTS base, ffmpeg and tini in a layer before the application, tini as PID 1, pruned binaries', () => {
  const major = Number(/^ARG NODE_IMAGE=node:(\d+)-bookworm-slim$/m.exec(dockerfile)?.[1])
  assert.ok(major >= 22 && major % 2 === 0, `node ${major} is an LTS line`)
  assert.match(dockerfile, /^FROM \$\{NODE_IMAGE\} AS system$/m)
  assert.match(stage('system'), /apt-get install -y --no-install-recommends ffmpeg tini/)
  assert.not.match(stage('system'), /^COPY /m)
  assert.match(dockerfile, /^FROM system AS app$/m)
  assert.match(dockerfile, /^FROM app AS runtime$/m)
  assert.not.match(stage('runtime'), /apt-get/)
  assert.match(dockerfile, /^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m)
  assert.match(stage('deps'), /&& prune-onnxruntime\.sh node_modules$/m)
})

test.run()
