// The examples of the README and of every page under docs/ must work as printed: links reach a page and a
// heading, `mod` commands name real commands and flags, JSON examples parse, the server examples (curl
// against a local server, the base64 request for a multi-megabyte photo included) answer, and the table of
// built-in categories matches the defaults.
import {execFile} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {dirname, join, normalize} from 'node:path'
import {promisify} from 'node:util'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse as parseYaml} from 'yaml'

import {DEFAULT_CATEGORIES} from '../../src/lib/policy/defaults.js'
import {HTTP_ERROR_CODES, HTTP_ERRORS} from '../../src/server/errors.js'
import {ROOT, runInProcess} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {callbackReceiver, start, tempDir, testSettings, toyEngine} from './harness.js'

const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
const text = new Map(PAGES.map((p) => [p, readFileSync(join(ROOT, p), 'utf8')]))
const dir = tempDir('mod-server-readme-')

test.after(() => dir.remove())

/** The fenced blocks of a page with their language. */
function blocks(page: string): {lang: string; body: string}[] {
  return [...(text.get(page) as string).matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({lang: m[1], body: m[2]}))
}

/** The page's shell command that starts with `start`, its continuation lines (after `|` or `\`) joined. */
function command(page: string, start: string): string {
  const lines = (text.get(page) as string).split('\n')
  let i = lines.findIndex((l) => l.startsWith(start))
  assert.ok(i >= 0, `${page} has a line starting with ${start}`)
  const parts = [lines[i]]
  while (/[|\\]\s*$/.test(lines[i])) parts.push(lines[++i])
  return parts.join('\n')
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading.toLowerCase().replaceAll(/[^a-z0-9 _-]/g, '').replaceAll(' ', '-')
}

/** The headings' anchors of a page, or of another Markdown file the pages link to (bench/README.md). */
function anchors(page: string): Set<string> {
  const body = (text.get(page) ?? readFileSync(join(ROOT, page), 'utf8')).replaceAll(/^```[\s\S]*?^```$/gm, '')
  return new Set([...body.matchAll(/^#+ (.+)$/gm)].map((m) => anchor(m[1])))
}

test('every page is reached from the README, and every link between pages reaches a page and a heading', () => {
  const linked = new Set<string>()
  for (const page of PAGES) {
    for (const [, target] of (text.get(page) as string).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue
      const [file, hash] = target.split('#')
      const path = file === '' ? page : normalize(join(dirname(page), file))
      assert.ok(existsSync(join(ROOT, path)), `${page} links ${target}`)
      if (page === 'README.md') linked.add(path)
      if (hash !== undefined) assert.ok(anchors(path).has(hash), `${page} links ${target}: no such heading`)
    }
  }
  assert.equal(PAGES.filter((p) => p !== 'README.md' && !linked.has(p)), [])
})

interface ManifestFlag {
  char?: string
  allowNo?: boolean
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as {
  commands: Record<string, {flags: Record<string, ManifestFlag>}>
}
/** oclif's own commands (from its plugins), with no flags of their own. */
const PLUGIN_COMMANDS = new Set(['version', 'autocomplete'])

/** The problems of one `mod …` invocation (its words after `mod`): an unknown command or flag. */
function checkInvocation(words: string[]): string[] {
  let id = ''
  let used = 0
  for (let n = 1; n <= Math.min(2, words.length); n++) {
    const candidate = words.slice(0, n).join(':')
    if (manifest.commands[candidate] || PLUGIN_COMMANDS.has(candidate)) [id, used] = [candidate, n]
  }
  if (id === '') return words.length === 0 || words[0] === '<command>' || words[0].startsWith('-') ? [] : [`no command ${words[0]}`]
  const flags = manifest.commands[id]?.flags ?? {}
  const problems: string[] = []
  for (const word of words.slice(used)) {
    if (word === '--help' || word === '-h') continue
    const long = /^--([a-z][a-z0-9-]*)/.exec(word)
    const short = /^-([a-zA-Z])$/.exec(word)
    if (long) {
      const name = long[1]
      const known = flags[name] ?? (name.startsWith('no-') ? flags[name.slice(3)] : undefined)
      if (!known || (name.startsWith('no-') && !flags[name] && !known.allowNo)) problems.push(`${id}: no flag --${name}`)
    } else if (short && !Object.values(flags).some((f) => f.char === short[1])) problems.push(`${id}: no flag -${short[1]}`)
  }
  return problems
}

test('every `mod` command in the pages names a real command and its own flags', () => {
  const problems: string[] = []
  let checked = 0
  for (const page of PAGES) {
    for (const {lang, body} of blocks(page)) {
      if (lang !== 'sh') continue
      for (const line of body.split('\n')) {
        const code = line.replace(/\s#.*$/, '')
        for (const part of code.split(/\|\||&&|[|;]/)) {
          const words = part.trim().split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w))
          if (words[0] !== 'mod') continue
          checked++
          problems.push(...checkInvocation(words.slice(1)).map((p) => `${page}: ${line.trim()}: ${p}`))
        }
      }
    }
  }
  assert.equal(problems, [])
  assert.ok(checked >= 20, `${checked} commands checked`)
})

test('every JSON example parses', () => {
  let checked = 0
  for (const page of PAGES) {
    for (const {lang, body} of blocks(page)) {
      if (lang !== 'json') continue
      checked++
      assert.not.throws(() => JSON.parse(body), `${page}: ${body.slice(0, 60)}`)
    }
  }
  assert.ok(checked >= 2, `${checked} JSON examples`)
})

test('every policy example passes `mod policy validate`, its hash lists read from the list example and its word lists written', async () => {
  const listExample = blocks('docs/policy.md').find((b) => b.lang === '' && /^[0-9a-f]{64},/m.test(b.body))
  assert.ok(listExample, 'docs/policy.md has a hash list example')
  const folder = join(dir.path, 'policies')
  mkdirSync(join(folder, 'lists'), {recursive: true})
  writeFileSync(join(folder, 'lists', 'removals.txt'), listExample.body)
  writeFileSync(join(folder, 'shared.txt'), listExample.body)
  writeFileSync(join(folder, 'lists', 'hate.txt'), '# a word list, one entry a line\nsome phrase\n')
  let checked = 0
  // docs/ci.md's YAML is CI configuration (workflows, pipelines, hooks), not policies: checked below.
  for (const page of PAGES.filter((p) => p !== 'docs/ci.md')) {
    for (const {lang, body} of blocks(page)) {
      if (lang !== 'yaml') continue
      const file = join(folder, `example-${checked++}.yaml`)
      // An absolute list path of the example points into the test's folder.
      writeFileSync(file, body.replaceAll('/srv/lists/shared.txt', join(folder, 'shared.txt')))
      const r = await runInProcess(['policy', 'validate', file])
      assert.is(r.code, 0, `${page}: ${r.stdout}${r.stderr}`)
    }
  }
  assert.ok(checked >= 2, `${checked} policy examples`)
})

test("docs/ci.md's CI configurations are YAML that parses, each naming mod", () => {
  const configs = blocks('docs/ci.md').filter((b) => b.lang === 'yaml')
  assert.ok(configs.length >= 3, `${configs.length} CI examples`)
  for (const {body} of configs) {
    assert.not.throws(() => parseYaml(body), body.slice(0, 60))
    assert.match(body, 'mod')
  }
})

/** The steps of a GitHub workflow (or a list of steps) in a YAML example, wherever they are. */
function workflowSteps(node: unknown): {run?: string; shell?: string}[] {
  if (Array.isArray(node)) return node.flatMap((n) => (n && typeof n === 'object' && 'run' in n ? [n as {run: string}] : workflowSteps(n)))
  if (node && typeof node === 'object') return Object.values(node).flatMap(workflowSteps)
  return []
}

test("docs/ci.md's GitHub steps and shell recipes that pipe a file list into mod fail when the list's command fails", () => {
  // GitHub runs `run:` without `shell:` as `bash -e`, without pipefail: a git diff that fails would give mod an
  // empty list, which scans nothing and exits 0.
  const pipes = /\|\s*mod\b/
  const steps = blocks('docs/ci.md')
    .filter((b) => b.lang === 'yaml')
    .flatMap((b) => workflowSteps(parseYaml(b.body)))
    .filter((s) => pipes.test(s.run ?? ''))
  assert.ok(steps.length >= 2, `${steps.length} GitHub steps piping into mod`)
  for (const step of steps) assert.is(step.shell, 'bash', step.run)
  const scripts = blocks('docs/ci.md').filter((b) => b.lang === 'sh' && pipes.test(b.body))
  assert.ok(scripts.length >= 1)
  for (const {body} of scripts) assert.ok(body.indexOf('set -o pipefail') >= 0 && body.indexOf('set -o pipefail') < body.search(pipes), body)
})

test("docs/ci.md's videos loop keeps the worst exit code under a CI shell's -e", async () => {
  const script = blocks('docs/ci.md').find((b) => b.lang === 'sh' && b.body.includes('mod scan-video'))
  assert.ok(script)
  // git lists three changed files; mod exits 1 for the first video and 2 for the second.
  const bin = join(dir.path, 'videos-bin')
  mkdirSync(bin, {recursive: true})
  writeFileSync(join(bin, 'git'), "#!/bin/sh\nprintf 'a.mp4\\0notes.txt\\0b.MOV\\0'\n", {mode: 0o755})
  writeFileSync(join(bin, 'mod'), '#!/bin/sh\ncase "$2" in a.mp4) exit 1 ;; b.MOV) exit 2 ;; esac\nexit 0\n', {mode: 0o755})
  const cwd = join(dir.path, 'videos')
  mkdirSync(cwd, {recursive: true})
  const r = await promisify(execFile)('bash', ['-e', '-c', script.body], {cwd, env: {...process.env, PATH: `${bin}:${process.env.PATH}`}}).then(
    () => 0,
    (e: {code: number}) => e.code,
  )
  assert.is(r, 2)
})

test("docs/ci.md's Jenkins steps find mod in a docker agent, whose PATH is the image's whatever withEnv says", async () => {
  const pipeline = blocks('docs/ci.md').find((b) => b.lang === 'groovy')
  assert.ok(pipeline)
  const workspace = join(dir.path, 'jenkins-workspace')
  mkdirSync(workspace, {recursive: true})
  // withEnv's variables, but for PATH, which the Docker Pipeline plugin leaves out of `docker exec`.
  const env: Record<string, string> = {WORKSPACE: workspace}
  for (const [, name, value] of pipeline.body.matchAll(/"([A-Za-z_][\w+]*)=\$\{env\.WORKSPACE\}([^"]*)"/g)) if (!name.startsWith('PATH')) env[name] = `${workspace}${value}`
  const steps = [...pipeline.body.matchAll(/\bsh '''([\s\S]*?)'''|\bsh '([^'\n]*)'/g)].map((m) => m[1] ?? m[2])
  assert.ok(steps.length >= 2, `${steps.length} sh steps`)
  // The image's npm: a global install puts a stand-in mod (recording its calls) in NPM_CONFIG_PREFIX/bin.
  const image = join(dir.path, 'jenkins-image-bin')
  mkdirSync(image, {recursive: true})
  const calls = join(dir.path, 'jenkins-mod-calls')
  writeFileSync(
    join(image, 'npm'),
    `#!/bin/sh\nmkdir -p "$NPM_CONFIG_PREFIX/bin"\nprintf '#!/bin/sh\\necho "$*" >> ${calls}\\n' > "$NPM_CONFIG_PREFIX/bin/mod"\nchmod +x "$NPM_CONFIG_PREFIX/bin/mod"\n`,
    {mode: 0o755},
  )
  for (const step of steps) {
    const r = await promisify(execFile)('sh', ['-e', '-c', step], {cwd: workspace, env: {...env, PATH: `${image}:/usr/bin:/bin`}}).then(
      () => '',
      (e: {code: number; stderr: string}) => `exit ${e.code}: ${e.stderr}`,
    )
    assert.is(r, '', step)
  }
  assert.equal(
    readFileSync(calls, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' ').slice(0, 2).join(' ')),
    ['models pull', 'scan assets'],
  )
})

test("docs/ci.md's GitLab SARIF job passes on a violation, which GitLab needs to add its findings, and fails without a report", async () => {
  const jobs = blocks('docs/ci.md')
    .filter((b) => b.lang === 'yaml')
    .map((b) => parseYaml(b.body) as Record<string, {script?: string[]; artifacts?: {reports?: {sarif?: string}}}>)
    .flatMap((doc) => Object.values(doc ?? {}))
    .filter((job) => job?.artifacts?.reports?.sarif)
  assert.is(jobs.length, 1)
  const bin = join(dir.path, 'gitlab-bin')
  mkdirSync(bin, {recursive: true})
  writeFileSync(join(bin, 'npm'), '#!/bin/sh\nexit 0\n', {mode: 0o755})
  const cwd = join(dir.path, 'gitlab-project')
  mkdirSync(cwd, {recursive: true})
  // As GitLab's runner runs a job's script in bash: the lines in one shell, with errexit and pipefail.
  const job = async (scan: string): Promise<number> => {
    writeFileSync(join(bin, 'mod'), `#!/bin/sh\n[ "$1" = models ] && exit 0\n${scan}\n`, {mode: 0o755})
    const script = `set -eo pipefail\n${(jobs[0].script ?? []).join('\n')}\n`
    return promisify(execFile)('bash', ['-c', script], {cwd, env: {...process.env, PATH: `${bin}:${process.env.PATH}`}}).then(
      () => 0,
      (e: {code: number}) => e.code,
    )
  }
  assert.is(await job(`echo '{"version":"2.1.0"}'; exit 1`), 0, 'a violation')
  assert.is(readFileSync(join(cwd, jobs[0].artifacts?.reports?.sarif as string), 'utf8'), '{"version":"2.1.0"}\n')
  assert.is(await job('exit 2'), 2, 'a setup error, no report')
})

test('the docs list every built-in category with its parent', () => {
  const pages = PAGES.filter((p) => /^\| `nudity` \| none \|$/m.test(text.get(p) as string))
  assert.equal(pages, ['docs/policy.md'])
  const rows = [...(text.get(pages[0]) as string).matchAll(/^\| `([a-z_]+)` \| (none|`([a-z_]+)`) \|$/gm)].map((m) => [m[1], m[3] ?? null])
  assert.equal(rows, DEFAULT_CATEGORIES.map((c) => [c.name, c.parent]))
})

test('the error summary of docs/rest.md names every code with its status, once', () => {
  const body = text.get('docs/rest.md') as string
  const table = body.slice(body.indexOf('| status | code |'))
  const rows = [...table.matchAll(/^\| (\d{3})[^|]* \| (.*) \|$/gm)].map((m) => ({status: Number(m[1]), codes: [...m[2].matchAll(/`([a-z_]+)`/g)].map((c) => c[1])}))
  const named = rows.flatMap((r) => r.codes.filter((c) => c in HTTP_ERRORS).map((code) => [code, r.status]))
  assert.equal(named.map(([c]) => c).sort(), [...HTTP_ERROR_CODES].sort())
  for (const [code, status] of named) assert.is(status, HTTP_ERRORS[code as keyof typeof HTTP_ERRORS].status, String(code))
})

/** Runs a shell snippet against the server, with localhost:8000 pointing at it. */
async function run(script: string, base: string, key: string, cwd: string, env: Record<string, string> = {}): Promise<string> {
  const host = base.replace('http://', '')
  const {stdout} = await promisify(execFile)('bash', ['-c', `set -o pipefail\n${script.replaceAll('localhost:8000', host).replaceAll('127.0.0.1:8000', host)}`], {
    cwd,
    env: {...process.env, KEY: key, ...env},
    maxBuffer: 1024 * 1024,
  })
  return stdout
}

test('the server examples of the README and docs/rest.md answer as printed', async () => {
  // Noise compresses badly: a JPEG of several MB, whose base64 is far beyond one command-line argument's limit (128 KiB).
  const photo = await sharp(randomBytes(2000 * 1500 * 3), {raw: {width: 2000, height: 1500, channels: 3}}).jpeg({quality: 100}).toBuffer()
  assert.ok(photo.length > 2 * 1024 * 1024, `${photo.length} bytes`)
  writeFileSync(join(dir.path, 'beach.jpg'), photo)
  copyFileSync(join(ROOT, 'test/fixtures/photos/astronaut.jpg'), join(dir.path, 'a.jpg'))
  await sharp(join(ROOT, 'test/fixtures/photos/brick.jpg')).png().toFile(join(dir.path, 'b.png'))

  // One engine for both servers: only their keys differ.
  const base = testSettings(warmCacheDir(join(dir.path, 'cache')), {apiKey: 'readme-key'})
  mkdirSync(join(dir.path, 'jobs'))
  const settings = {...base, jobs: {...base.jobs, storage: join(dir.path, 'jobs'), callbackAllowPrivate: true}}
  const engine = toyEngine(settings)
  try {
    const server = await start(engine, settings)
    try {
      const base64 = JSON.parse(await run(command('docs/rest.md', `{ printf '{"image_base64": "'`), server.base, 'readme-key', dir.path))
      assert.equal([base64.source, typeof base64.is_safe], ['image_base64', 'boolean'])

      const health = JSON.parse(await run(command('docs/rest.md', 'curl -s localhost:8000/health'), server.base, 'readme-key', dir.path))
      assert.is(health.status, 'ok')
      const categories = JSON.parse(await run(command('docs/rest.md', 'curl -s -H "X-API-Key: $KEY" localhost:8000/v1/categories'), server.base, 'readme-key', dir.path))
      assert.equal(Object.keys(categories), ['preset', 'model', 'coverage', 'categories'])
      const one = JSON.parse(await run(command('docs/rest.md', 'curl -s -H "X-API-Key: $KEY" -F file=@beach.jpg'), server.base, 'readme-key', dir.path))
      assert.equal([one.source, typeof one.is_safe], ['beach.jpg', 'boolean'])
      const batch = JSON.parse(await run(command('docs/rest.md', 'curl -s -H "X-API-Key: $KEY" -F files=@a.jpg'), server.base, 'readme-key', dir.path))
      assert.equal(batch.results.map((r: {source: string}) => r.source), ['a.jpg', 'b.png'])
      await promisify(execFile)('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=5:duration=3', '-pix_fmt', 'yuv420p', join(dir.path, 'clip.mp4')])
      const video = JSON.parse(await run(command('docs/rest.md', 'curl -s -H "X-API-Key: $KEY" -F file=@clip.mp4'), server.base, 'readme-key', dir.path))
      assert.equal([video.source, video.fps, typeof video.stopped_early], ['clip.mp4', 2, 'boolean'])
      // docs/video.md's video job: submitted (202 and its Location), read, deleted; the id printed there is an example.
      copyFileSync(join(dir.path, 'clip.mp4'), join(dir.path, 'film.mp4'))
      // Its callback goes to a receiver here (the page's host is a placeholder that never resolves).
      const hooks = await callbackReceiver()
      try {
        const submit = command('docs/video.md', 'curl -i -H "X-API-Key: $KEY" -F file=@film.mp4').replace('https://hooks.example/mod', hooks.url)
        const submitted = await run(submit, server.base, 'readme-key', dir.path)
        assert.match(submitted, /^HTTP\/1\.1 202 /, submitted)
        const id = /\r\nlocation: \/v1\/jobs\/([0-9a-f-]{36})\r\n/i.exec(submitted)?.[1] as string
        assert.ok(id, submitted)
        assert.equal(JSON.parse((await hooks.callbackFor(id)).body).status, 'done')
        const printed = '5f0c7a1e-8a7b-4a53-9a51-3f1f9d0e2c41'
        const videoJob = JSON.parse(await run(command('docs/video.md', 'curl -H "X-API-Key: $KEY" http://127.0.0.1:8000/v1/jobs/').replace(printed, id), server.base, 'readme-key', dir.path))
        assert.equal([videoJob.id, videoJob.source, videoJob.status, videoJob.result?.source], [id, 'film.mp4', 'done', 'film.mp4'])
        await run(command('docs/video.md', 'curl -X DELETE -H "X-API-Key: $KEY"').replace(printed, id), server.base, 'readme-key', dir.path)
        const gone = JSON.parse(await run(command('docs/video.md', 'curl -H "X-API-Key: $KEY" http://127.0.0.1:8000/v1/jobs/').replace(printed, id), server.base, 'readme-key', dir.path))
        assert.is(gone.error?.code, 'not_found', JSON.stringify(gone))
      } finally {
        await hooks.close()
      }

      // The bulk job of uploaded images: submitted, followed until done, its results read.
      const job = JSON.parse(await run(command('docs/rest.md', 'curl -s -H "X-API-Key: $KEY" -F files=@a.jpg -F files=@b.png localhost:8000/v1/jobs/images'), server.base, 'readme-key', dir.path))
      assert.is(job.status, 'queued')
      const env = {ID: job.id as string}
      let state = job
      for (let i = 0; i < 200 && state.status !== 'done'; i++) {
        await new Promise((r) => setTimeout(r, 50))
        state = JSON.parse(await run(command('docs/rest.md', 'curl -s -H "X-API-Key: $KEY" localhost:8000/v1/jobs/$ID'), server.base, 'readme-key', dir.path, env))
      }
      assert.equal([state.id, state.status, state.progress.items_done], [job.id, 'done', 2])
      const results = await run(command('docs/rest.md', 'curl -s -D - -H "X-API-Key: $KEY" "localhost:8000/v1/jobs/$ID/results?offset=0"'), server.base, 'readme-key', dir.path, env)
      const [head, body] = results.split('\r\n\r\n')
      assert.match(head, /^HTTP\/1\.1 200 /)
      assert.match(head, /\r\nx-mod-job-status: done\r\n/i)
      assert.equal(body.trim().split('\n').map((line) => JSON.parse(line).source), ['a.jpg', 'b.png'])
    } finally {
      await server.stop()
    }
    // The README's first request, with the key its `mod serve` line sets, from the clone's folder.
    const keyed = await start(engine, {...settings, apiKey: 'secret'})
    try {
      const first = command('README.md', 'curl -s -H "X-API-Key: secret" -F file=@')
      const result = JSON.parse(await run(first, keyed.base, 'unused', ROOT))
      assert.equal([result.source, typeof result.is_safe], ['astronaut.jpg', 'boolean'])
    } finally {
      await keyed.stop()
    }
  } finally {
    await engine.close()
  }
})

test.run()
