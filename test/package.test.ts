// `npm pack` makes a tarball that `npm install -g` installs with no network, and the installed `mod` runs from PATH:
// the tarball attached to a release, installed by the line of docs/ci.md with the release's URL on 127.0.0.1.
// npm resolves a tarball's dependencies through registry metadata, which `npm ci` does not keep, so a registry on
// 127.0.0.1 answers that metadata from package-lock.json; the package files themselves come from npm's cache, where
// `npm ci` put them (a file the cache lacks would be asked of this registry, which has none: the install fails).
import {spawn} from 'node:child_process'
import {existsSync, readFileSync, readdirSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {basename, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT, tempDir} from './helpers/cli.js'
import {directToLoopback} from './helpers/proxy-env.js'

interface Locked {
  name?: string
  version: string
  integrity?: string
  dev?: boolean
  [field: string]: unknown
}

/** Registry metadata (packuments) for every production package of the lock, by name. */
function packuments(base: string): Map<string, {name: string; 'dist-tags': {latest: string}; versions: Record<string, unknown>}> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {packages: Record<string, Locked>}
  const out = new Map<string, {name: string; 'dist-tags': {latest: string}; versions: Record<string, unknown>}>()
  for (const [path, p] of Object.entries(lock.packages)) {
    if (path === '' || p.dev || !p.integrity) continue
    const name = p.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
    const doc = out.get(name) ?? {name, 'dist-tags': {latest: p.version}, versions: {}}
    const keep = ['dependencies', 'optionalDependencies', 'peerDependencies', 'peerDependenciesMeta', 'os', 'cpu', 'libc', 'bin', 'engines']
    doc.versions[p.version] = {
      name,
      version: p.version,
      ...Object.fromEntries(keep.filter((k) => p[k] !== undefined).map((k) => [k, p[k]])),
      dist: {integrity: p.integrity, tarball: `${base}/-/${encodeURIComponent(name)}-${p.version}.tgz`},
    }
    out.set(name, doc)
  }
  return out
}

/** Runs a command without blocking this process: the registry above answers from the same event loop. */
function run(cmd: string, args: string[], opts: {cwd?: string; env?: NodeJS.ProcessEnv} = {}): Promise<{status: number | null; stdout: string; stderr: string}> {
  return new Promise((done) => {
    const child = spawn(cmd, args, {cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('close', (status) => done({status, stdout, stderr}))
  })
}

const dir = tempDir('mod-test-')
let server: Server
let registry = ''
let docs: ReturnType<typeof packuments> | undefined
/** Where a release's assets are downloaded from: the folder `npm pack` writes into. */
const RELEASES = '/OWNER/REPO/releases/download/'

test.before(async () => {
  server = createServer((req, res) => {
    if (req.url?.startsWith(RELEASES)) {
      const asset = join(dir.path, basename(req.url))
      res.writeHead(existsSync(asset) ? 200 : 404, {'content-type': 'application/octet-stream'})
      res.end(existsSync(asset) ? readFileSync(asset) : '')
      return
    }
    // npm asks for each of a few hundred packages: the lock is read once.
    docs ??= packuments(registry)
    const name = decodeURIComponent((req.url ?? '/').slice(1))
    const doc = docs.get(name)
    res.writeHead(doc ? 200 : 404, {'content-type': 'application/json'})
    res.end(JSON.stringify(doc ?? {error: 'not found'}))
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

test.after(() => {
  server.close()
  dir.remove()
})

/** The one install line of docs/ci.md's recipes, with the release's tag and tarball name of this version. */
function installLine(): string {
  const text = readFileSync(join(ROOT, 'docs', 'ci.md'), 'utf8')
  const lines = [...new Set(text.match(/npm install --global --ignore-scripts https:\/\/\S+?\.tgz/g))]
  assert.is(lines.length, 1, `docs/ci.md's recipes install with one line: ${lines.join(', ')}`)
  return lines[0]
}

test("every install line of the README and docs is docs/ci.md's one line for this version's release tarball; none installs the unpublished package", () => {
  const {version} = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string}
  // The release's host is only read here, never reached: the install below takes the tarball from 127.0.0.1.
  const tarball = new URL(installLine().split(' ').at(-1) as string)
  assert.is(installLine(), `npm install --global --ignore-scripts ${tarball.href}`)
  assert.equal([tarball.protocol, tarball.pathname], ['https:', `${RELEASES}v${version}/mod-moderation-cli-${version}.tgz`])
  const texts = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => join('docs', f))].map((f) => [f, readFileSync(join(ROOT, f), 'utf8')])
  // The one line for when the package is published, naming this version.
  const published = `becomes \`npm install --global --ignore-scripts @mod-moderation/cli@${version}\``
  assert.ok(texts.some(([file, text]) => file === join('docs', 'ci.md') && text.includes(published)), published)
  for (const [file, text] of texts) assert.not.match(text.replace(published, ''), /npm (install|i) (-g|--global) (--ignore-scripts )?@mod-moderation\/cli/, file)
})

test("npm pack gives a tarball that docs/ci.md's install line installs offline; mod --help, mod scan and mod serve run from PATH", async () => {
  const pack = await run('npm', ['pack', '--pack-destination', dir.path, '--json'])
  assert.is(pack.status, 0, pack.stderr)
  const [{filename, files}] = JSON.parse(pack.stdout) as [{filename: string; files: {path: string}[]}]
  const packed = files.map((f) => f.path)
  for (const needed of ['LICENSE', 'CHANGELOG.md', 'README.md', 'bin/run.js', 'dist/commands/scan.js', 'oclif.manifest.json', 'models/nsfw/nsfw-mobilenet-v2.onnx', 'models/nsfw/nsfw-inception-v3.onnx', 'models/ocr/det.onnx', 'models/ocr/rec.onnx', 'models/ocr/keys.txt', 'models/ocr/LICENSE']) {
    assert.ok(packed.includes(needed), `${needed} is not in the tarball`)
  }
  assert.not.ok(packed.some((p) => p.startsWith('test/') || p.startsWith('src/')), 'tests and sources stay out of the tarball')

  const prefix = join(dir.path, 'prefix')
  // docs/ci.md's line (--ignore-scripts included, which npm 10 needs too), the release's host replaced by this registry's.
  const release = new URL(installLine().split(' ').at(-1) as string)
  const [, ...line] = installLine().replace(release.origin, registry).split(' ')
  assert.ok(line.at(-1)?.endsWith(`/${filename}`), `npm pack wrote ${filename}`)
  const install = await run('npm', [...line, '--prefix', prefix, '--registry', registry, '--no-audit', '--no-fund', '--logs-max=0', '--update-notifier=false'], {
    cwd: dir.path,
    env: {...process.env, ...directToLoopback()},
  })
  assert.is(install.status, 0, install.stderr)
  assert.ok(readdirSync(join(prefix, 'bin')).includes('mod'))

  const env = {...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))), PATH: `${join(prefix, 'bin')}:${process.env.PATH}`, NO_COLOR: '1'}
  const help = await run('mod', ['--help'], {cwd: dir.path, env})
  assert.is(help.status, 0, help.stderr)
  assert.match(help.stdout, /scan\s+Moderate images/)
  const photo = join(ROOT, 'test', 'fixtures', 'photos', readdirSync(join(ROOT, 'test', 'fixtures', 'photos')).find((f) => /\.(jpe?g|png)$/i.test(f)) as string)
  const scan = await run('mod', ['scan', photo, '--json'], {cwd: dir.path, env: {...env, MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.is(scan.status, 0, scan.stderr)
  const [result] = JSON.parse(scan.stdout) as [{source: string; labels: {name: string}[]}]
  assert.is(result.source, photo)
  assert.equal(result.labels.map((l) => l.name).sort(), ['nudity', 'sexual_activity', 'suggestive'])

  const serve = spawn('mod', ['serve', '--host', '127.0.0.1', '--port', '0'], {cwd: dir.path, env: {...env, MOD_CACHE_DIR: join(dir.path, 'cache')}})
  try {
    const address = await new Promise<string>((done, fail) => {
      let seen = ''
      serve.stderr.setEncoding('utf8').on('data', (d: string) => {
        seen += d
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen)
        if (m) done(m[1])
      })
      serve.on('exit', (code) => fail(new Error(`mod serve exited ${code}: ${seen}`)))
    })
    const health = await fetch(`${address}/health`)
    assert.is(health.status, 200)
    assert.is(((await health.json()) as {status: string}).status, 'ok')
  } finally {
    serve.kill('SIGTERM')
  }
})

test.run()
