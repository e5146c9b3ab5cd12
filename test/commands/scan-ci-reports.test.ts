import {spawn, spawnSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import AjvDraft04Module from 'ajv-draft-04'
import addFormatsModule from 'ajv-formats'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, ROOT, runCli, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {git} from '../helpers/git.js'
import {pythonTools} from '../helpers/python-tools.js'
import {skip} from '../helpers/skip.js'
import {slideshowWebp} from '../helpers/slideshow.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

// Both are CommonJS modules whose default export NodeNext types as the module namespace.
const Ajv = AjvDraft04Module as unknown as typeof AjvDraft04Module.default
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

// The SARIF 2.1.0 schema as its authors publish it (draft-04 JSON Schema), shipped by Microsoft's jest-sarif.
const require = createRequire(import.meta.url)
const SARIF_SCHEMA = JSON.parse(readFileSync(join(require.resolve('@microsoft/jest-sarif/package.json'), '..', 'lib', 'schemas', 'sarif-2.1.0-rtm.5.json'), 'utf8'))

/** A validator of the published schema: its formats checked; its one pattern that is not valid in Unicode mode read as written. */
function sarifValidator(): (log: unknown) => string | undefined {
  const ajv = new Ajv({allErrors: true, strict: false, unicodeRegExp: false})
  addFormats(ajv)
  const validate = ajv.compile(SARIF_SCHEMA)
  return (log) => (validate(log) ? undefined : JSON.stringify(validate.errors, null, 1))
}

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const work = join(dir.path, 'repo')
// A name with every character GitHub's workflow commands must escape in a property.
const ODD = 'x,y:z%\r\nw.png'

test.before(async () => {
  mkdirSync(join(work, 'assets', 'sub'), {recursive: true})
  writeRednessPolicy(work)
  writeFileSync(join(work, 'assets', 'red one.png'), await solidPng(255, 0, 0))
  writeFileSync(join(work, 'assets', 'sub', 'blue.png'), await solidPng(0, 0, 255))
  writeFileSync(join(work, 'assets', 'sub', ODD), await solidPng(250, 0, 0))
  writeFileSync(join(work, 'broken.png'), 'not an image')
})

test.after(() => dir.remove())

const scan = (format: string, ...more: string[]) => runInProcess(['scan', 'assets', 'broken.png', '--config', 'policy.yaml', '--format', format, ...more], {env, cwd: work})

test('--format sarif is a SARIF 2.1.0 log valid against its schema: one result per violation and per unreadable input', async () => {
  const r = await scan('sarif')
  assert.is(r.code, 1, r.stderr)
  const log = JSON.parse(r.stdout)
  const check = sarifValidator()
  assert.is(check(log), undefined)
  // The check has teeth: a level SARIF does not define is refused.
  assert.ok(check({...log, runs: [{...log.runs[0], results: [{...log.runs[0].results[0], level: 'fatal'}]}]}))
  const [run] = log.runs
  const results = run.results.map((x: {ruleId: string; level: string; locations: {physicalLocation: {artifactLocation: {uri: string; uriBaseId: string}; region: {startLine: number}}}[]}) => [
    x.ruleId,
    x.level,
    x.locations[0].physicalLocation.artifactLocation.uri,
    x.locations[0].physicalLocation.artifactLocation.uriBaseId,
    x.locations[0].physicalLocation.region.startLine,
  ])
  assert.equal(results, [
    ['redness', 'error', 'assets/red%20one.png', '%SRCROOT%', 1],
    ['redness', 'error', `assets/sub/${encodeURIComponent(ODD)}`, '%SRCROOT%', 1],
    ['unsupported_media', 'error', 'broken.png', '%SRCROOT%', 1],
  ])
  // Each location, resolved against its base as a URI, names the very file.
  for (const x of run.results) {
    const url = new URL(x.locations[0].physicalLocation.artifactLocation.uri, run.originalUriBaseIds['%SRCROOT%'].uri)
    assert.ok(readFileSync(url).length > 0)
  }
  const ruleIds = run.tool.driver.rules.map((x: {id: string}) => x.id)
  assert.ok(ruleIds.includes('redness') && ruleIds.includes('weapons') && ruleIds.includes('unsupported_media'), ruleIds.join())
  assert.match(run.results[0].partialFingerprints['imageSha256/v1'], /^[0-9a-f]{64}$/)
  assert.is(r.stderr, '4 scanned: 1 safe, 2 unsafe, 1 error\n')
})

test('--format sarif and github name files relative to the root of the git repository the working folder is in, and a file outside it by its file URI or absolute path', async () => {
  const repo = join(dir.path, 'git-repo')
  const app = join(repo, 'app')
  mkdirSync(join(app, 'assets'), {recursive: true})
  git(repo, 'init', '-q')
  writeRednessPolicy(app)
  const red = await solidPng(255, 0, 0)
  writeFileSync(join(app, 'assets', 'red.png'), red)
  writeFileSync(join(repo, 'top red.png'), red)
  const outside = join(dir.path, 'outside.png')
  writeFileSync(outside, red)
  const r = await runInProcess(['scan', 'assets', '../top red.png', outside, '--config', 'policy.yaml', '--format', 'sarif'], {env, cwd: app})
  assert.is(r.code, 1, r.stderr)
  const log = JSON.parse(r.stdout)
  assert.is(sarifValidator()(log), undefined)
  const [run] = log.runs
  assert.equal(run.originalUriBaseIds, {'%SRCROOT%': {uri: pathToFileURL(`${realpathSync(repo)}/`).href}})
  const locations = run.results.map((x: {locations: {physicalLocation: {artifactLocation: unknown}}[]}) => x.locations[0].physicalLocation.artifactLocation)
  assert.equal(locations, [
    {uri: 'app/assets/red.png', uriBaseId: '%SRCROOT%'},
    {uri: 'top%20red.png', uriBaseId: '%SRCROOT%'},
    {uri: pathToFileURL(realpathSync(outside)).href},
  ])
  for (const {uri, uriBaseId} of locations as {uri: string; uriBaseId?: string}[]) {
    assert.equal(readFileSync(new URL(uri, uriBaseId ? run.originalUriBaseIds[uriBaseId].uri : undefined)), red)
  }
  // The three are one image: each result keeps a fingerprint of its own, lest code scanning take them for one alert.
  const sha = createHash('sha256').update(red).digest('hex')
  assert.equal(run.results.map((x: {partialFingerprints: Record<string, string>}) => x.partialFingerprints['imageSha256/v1']), [sha, `${sha}:2`, `${sha}:3`])
  // GitHub annotations too: the runner reads a relative file from the checkout's root, not the step's folder.
  const github = await runInProcess(['scan', 'assets', '../top red.png', outside, '--config', 'policy.yaml', '--format', 'github'], {env, cwd: app})
  assert.is(github.code, 1, github.stderr)
  const files = github.stdout.trimEnd().split('\n').map(parseCommand).filter((c) => c.name === 'error').map((c) => c.props.file)
  assert.equal(files, ['app/assets/red.png', 'top red.png', realpathSync(outside)])
})

test('a file named by an absolute path through a link to the working folder ($PWD/a.png) is named as the file of the repository it is, in SARIF, GitHub and JUnit reports', async () => {
  const repo = join(dir.path, 'linked-repo')
  mkdirSync(join(repo, 'assets'), {recursive: true})
  git(repo, 'init', '-q')
  writeRednessPolicy(repo)
  writeFileSync(join(repo, 'assets', 'red.png'), await solidPng(255, 0, 0))
  // The working folder reached through a link, as a shell's $PWD or a runner's $GITHUB_WORKSPACE may name it.
  const link = join(dir.path, 'workspace-link')
  symlinkSync(repo, link)
  const file = join(link, 'assets', 'red.png')
  const run = (format: string) => runInProcess(['scan', file, '--config', 'policy.yaml', '--format', format], {env, cwd: link})
  const sarif = await run('sarif')
  assert.is(sarif.code, 1, sarif.stderr)
  assert.equal(JSON.parse(sarif.stdout).runs[0].results[0].locations[0].physicalLocation.artifactLocation, {uri: 'assets/red.png', uriBaseId: '%SRCROOT%'})
  const github = await run('github')
  assert.equal(github.stdout.trimEnd().split('\n').map(parseCommand).filter((c) => c.name === 'error').map((c) => c.props.file), ['assets/red.png'])
  const junit = await run('junit')
  assert.match(junit.stdout, '<testcase classname="mod scan" name="assets/red.png">')
})

test('--format sarif with nothing flagged is a valid log with no results', async () => {
  const r = await runInProcess(['scan', 'assets/sub/blue.png', '--config', 'policy.yaml', '--format', 'sarif'], {env, cwd: work})
  assert.is(r.code, 0, r.stderr)
  const log = JSON.parse(r.stdout)
  assert.is(sarifValidator()(log), undefined)
  assert.equal(log.runs[0].results, [])
})

test('--format sarif gives the image read from stdin a location too (named -): GitHub code scanning refuses a whole log with a result that has none', async () => {
  const r = await runCli(['scan', 'assets/red one.png', '-', '--config', 'policy.yaml', '--format', 'sarif'], {env, cwd: work, stdin: await solidPng(255, 0, 0)})
  assert.is(r.code, 1, r.stderr)
  const log = JSON.parse(r.stdout)
  assert.is(sarifValidator()(log), undefined)
  const locations = log.runs[0].results.map((x: {locations?: {physicalLocation: {artifactLocation: unknown; region: unknown}}[]}) => x.locations?.map((l) => l.physicalLocation))
  assert.equal(locations, [
    [{artifactLocation: {uri: 'assets/red%20one.png', uriBaseId: '%SRCROOT%'}, region: {startLine: 1}}],
    [{artifactLocation: {uri: '-', description: {text: 'the image read from standard input'}}, region: {startLine: 1}}],
  ])
})

const tools = pythonTools()
const junitRead = `
import json, sys
from junitparser import JUnitXml, Failure, Error, Skipped
xml = JUnitXml.fromstring(sys.stdin.buffer.read())
out = {"suites": []}
for suite in xml:
    cases = []
    for case in suite:
        cases.append({"name": case.name, "classname": case.classname,
                      "result": [{"kind": type(r).__name__, "type": r.type, "message": r.message} for r in case.result]})
    out["suites"].append({"name": suite.name, "tests": suite.tests, "failures": suite.failures, "errors": suite.errors, "skipped": suite.skipped, "cases": cases})
print(json.dumps(out))
`

if ('skip' in tools) skip('--format junit is read by junitparser', tools.skip)
else {
  test('--format junit is read by junitparser: a passed case per safe item, <failure> per violation, <error> per unreadable input', async () => {
    const r = await scan('junit')
    assert.is(r.code, 1, r.stderr)
    const parsed = spawnSync(tools.python, ['-c', junitRead], {input: r.stdout, encoding: 'utf8'})
    assert.is(parsed.status, 0, parsed.stderr)
    const {suites} = JSON.parse(parsed.stdout)
    assert.is(suites.length, 1)
    const [suite] = suites
    assert.equal([suite.tests, suite.failures, suite.errors, suite.skipped], [4, 2, 1, 0])
    assert.equal(
      suite.cases.map((c: {name: string; result: {kind: string; type: string}[]}) => [c.name, c.result.map((x) => `${x.kind}:${x.type}`)]),
      [
        ['assets/red one.png', ['Failure:redness']],
        ['assets/sub/blue.png', []],
        [`assets/sub/${ODD}`, ['Failure:redness']],
        ['broken.png', ['Error:unsupported_media']],
      ],
    )
  })
}

// The Jenkins xUnit plug-in's JUnit schema (the newest it has), which Jenkins checks a report against.
const JUNIT_SCHEMA = join(ROOT, 'test', 'fixtures', 'schemas', 'junit-10.xsd')
const xsdCheck = `
import sys
from lxml import etree
schema = etree.XMLSchema(etree.parse(sys.argv[1]))
if not schema.validate(etree.fromstring(sys.stdin.buffer.read())):
    print("\\n".join(e.message for e in schema.error_log))
    sys.exit(1)
`

/** lxml's complaints about a JUnit document against JUNIT_SCHEMA, or undefined when it is valid. */
function validJunit(python: string, xml: string): string | undefined {
  const r = spawnSync(python, ['-c', xsdCheck, JUNIT_SCHEMA], {input: xml, encoding: 'utf8'})
  assert.ok(r.status === 0 || r.status === 1, r.stderr)
  return r.status === 0 ? undefined : r.stdout
}

if ('skip' in tools) skip('--format junit is valid against the Jenkins xUnit JUnit schema', tools.skip)
else {

  test('--format junit is valid against the Jenkins xUnit JUnit schema, with failures, errors and items a baseline accepts', async () => {
    const plain = await scan('junit')
    assert.is(plain.code, 1, plain.stderr)
    assert.is(validJunit(tools.python, plain.stdout), undefined)
    const baseline = join(dir.path, 'junit-baseline.json')
    await scan('json', '--write-baseline', baseline)
    const accepted = await scan('junit', '--baseline', baseline)
    // The two flagged images are accepted; the unreadable file is still an error (exit 2).
    assert.is(accepted.code, 2, accepted.stderr)
    assert.match(accepted.stdout, /<testsuite name="mod scan" tests="4" failures="0" errors="1" skipped="2">/)
    assert.is((accepted.stdout.match(/<skipped /g) ?? []).length, 2)
    assert.is(validJunit(tools.python, accepted.stdout), undefined)
    // The check has teeth: the schema allows no `skipped` count on <testsuites>.
    assert.match(validJunit(tools.python, accepted.stdout.replace('<testsuites ', '<testsuites skipped="2" ')) ?? '', /skipped.*not allowed/)
  })
}

test('each CI report names an animation not scored whole: a SARIF warning of its own rule, a JUnit <system-out>; the summary counts it', async () => {
  const anim = join(dir.path, 'anim')
  mkdirSync(anim)
  // The specialist off: 64 frames of it would be most of this test's time, and which frames are scored does not
  // depend on the signals.
  writeFileSync(join(anim, 'policy.yaml'), 'specialists: {nsfw: false}\n')
  writeFileSync(join(anim, 'seventy.webp'), await slideshowWebp(70))
  writeFileSync(join(anim, 'sixty-four.webp'), await slideshowWebp(64))
  const run = (format: string) => runInProcess(['scan', 'seventy.webp', 'sixty-four.webp', '--config', 'policy.yaml', '--format', format], {env, cwd: anim})
  const summary = '2 scanned: 2 safe, 0 unsafe, 0 errors; 1 animation with pictures left unscored'

  const sarif = await run('sarif')
  assert.is(sarif.code, 0, sarif.stderr)
  assert.is(sarif.stderr, `${summary}\n`)
  const log = JSON.parse(sarif.stdout)
  assert.is(sarifValidator()(log), undefined)
  const [{results, tool}] = log.runs
  assert.equal(
    results.map((x: {ruleId: string; level: string; message: {text: string}; suppressions?: unknown}) => [x.ruleId, x.level, x.message.text, x.suppressions]),
    [['animation_truncated', 'warning', 'seventy.webp: some pictures of the animation not scored', undefined]],
  )
  assert.equal(tool.driver.rules.find((x: {id: string}) => x.id === 'animation_truncated')?.defaultConfiguration, {level: 'warning'})

  const junit = await run('junit')
  assert.is(junit.code, 0, junit.stderr)
  const cases = [...junit.stdout.matchAll(/<testcase [^>]*name="([^"]*)"(\/>|>([^]*?)<\/testcase>)/g)].map((m) => [m[1], m[3]?.trim()])
  assert.equal(cases, [
    ['seventy.webp', '<system-out>some pictures of the animation not scored</system-out>'],
    ['sixty-four.webp', undefined],
  ])
  if (!('skip' in tools)) assert.is(validJunit(tools.python, junit.stdout), undefined)

  const github = await run('github')
  assert.is(github.code, 0, github.stderr)
  assert.equal(
    github.stdout.trimEnd().split('\n').map(parseCommand).map((c) => [c.name, c.props.file, c.props.title, c.message]),
    [
      ['warning', 'seventy.webp', 'mod: animation not checked whole', 'some pictures of the animation not scored'],
      ['notice', undefined, 'mod scan', summary],
    ],
  )

  const counts = await runInProcess(['scan', 'seventy.webp', 'sixty-four.webp', '--config', 'policy.yaml', '--summary', '--json'], {env, cwd: anim})
  assert.is(JSON.parse(counts.stdout).animation_truncated, 1, counts.stderr)
})

/**
 * A workflow command line read as GitHub documents it: `::name key=value,key=value::message`, where a property
 * value holds no raw `,` or `:` and neither part a raw line break; %25, %0D, %0A (and in values %3A, %2C) decode.
 */
function parseCommand(line: string): {name: string; props: Record<string, string>; message: string} {
  const m = /^::([a-z-]+)(?: ([^:\r\n]*))?::([^\r\n]*)$/.exec(line)
  if (!m) throw new Error(`not a workflow command: ${JSON.stringify(line)}`)
  const decode = (s: string) => s.replace(/%(25|0D|0A|3A|2C)/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)))
  const props = Object.fromEntries((m[2] ?? '').split(',').filter(Boolean).map((p) => {
    const eq = p.indexOf('=')
    assert.ok(eq > 0, p)
    return [p.slice(0, eq), decode(p.slice(eq + 1))]
  }))
  return {name: m[1], props, message: m[3].replace(/%(25|0D|0A)/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)))}
}

test('--format github prints an ::error workflow command on each flagged or unreadable file, its name escaped as GitHub documents', async () => {
  const r = await scan('github')
  assert.is(r.code, 1, r.stderr)
  const lines = r.stdout.split('\n')
  assert.is(lines.pop(), '')
  const commands = lines.map(parseCommand)
  assert.equal(
    commands.map((c) => [c.name, c.props.file, c.props.line, c.props.title, c.message]),
    [
      ['error', 'assets/red one.png', '1', 'mod: redness', 'redness 1.00 >= 0.5'],
      ['error', `assets/sub/${ODD}`, '1', 'mod: redness', 'redness 1.00 >= 0.5'],
      ['error', 'broken.png', '1', 'mod: could not scan (unsupported_media)', commands[2].message],
      ['notice', undefined, undefined, 'mod scan', '4 scanned: 1 safe, 2 unsafe, 1 error'],
    ],
  )
  assert.match(commands[2].message, /empty|image/)
})

test('--format github writes a control character of a name as a visible escape, which GitHub does not decode: the name stays one line', async () => {
  mkdirSync(join(work, 'controls'))
  writeFileSync(join(work, 'controls', 'a\tb\u001b[31m.png'), await solidPng(255, 0, 0, 16, 16))
  const r = await runInProcess(['scan', 'controls', '--config', 'policy.yaml', '--format', 'github'], {env, cwd: work})
  assert.is(r.code, 1, r.stderr)
  assert.not.match(r.stdout, /[\t\u001b]/)
  assert.is(parseCommand(r.stdout.split('\n')[0]).props.file, 'controls/a\\x09b\\x1b[31m.png')
})

test('--format junit: a tab in a name is a character reference, so two names that differ by it stay two test cases', async () => {
  mkdirSync(join(work, 'tabs'))
  for (const name of ['a\tb.png', 'a b.png']) writeFileSync(join(work, 'tabs', name), await solidPng(0, 0, 255, 16, 16))
  const r = await runInProcess(['scan', 'tabs', '--config', 'policy.yaml', '--format', 'junit'], {env, cwd: work})
  assert.is(r.code, 0, r.stderr)
  assert.not.match(r.stdout, '\t')
  const names = [...r.stdout.matchAll(/<testcase [^>]*name="([^"]*)"/g)].map((m) => m[1]).sort()
  assert.equal(names, ['tabs/a b.png', 'tabs/a&#9;b.png'])
})

test('--format junit: DEL, C1 controls, line separators and bidi controls in a name are character references, read back as the name', async () => {
  const odd = ['c1\u009b31m.png', 'rlo\u202egnp.exe.png', 'del\u007f.png', 'ls\u2028ps\u2029.png', 'iso\u2066x\u2069.png']
  mkdirSync(join(work, 'active'))
  for (const name of odd) writeFileSync(join(work, 'active', name), await solidPng(0, 0, 255, 16, 16))
  const r = await runInProcess(['scan', 'active', '--config', 'policy.yaml', '--format', 'junit'], {env, cwd: work})
  assert.is(r.code, 0, r.stderr)
  assert.is(r.stderr, '5 scanned: 5 safe, 0 unsafe, 0 errors\n')
  assert.not.match(r.stdout, /[\u007f-\u009f\u2028-\u202e\u2066-\u2069]/)
  assert.match(r.stdout, 'name="active/c1&#x9B;31m.png"')
  // What an XML parser reads: each reference is the character it names.
  const names = [...r.stdout.matchAll(/<testcase [^>]*name="([^"]*)"/g)].map((m) => m[1].replace(/&#x([0-9A-F]+);/g, (_, h: string) => String.fromCodePoint(parseInt(h, 16))))
  assert.equal(names.sort(), odd.map((n) => `active/${n}`).sort())
})

test('--format github on a scan stopped by a signal: the closing notice says it was stopped and how far it got, not a finished run', async () => {
  // stdin (-) never ends: the scan waits on it once the red image's annotation is out, until SIGINT.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  const child = spawn(process.execPath, [BIN, 'scan', 'assets/red one.png', '-', '--config', 'policy.yaml', '--format', 'github'], {cwd: work, env: {...base, ...env, NO_COLOR: '1'}})
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const closed = new Promise<number | null>((done) => child.on('close', done))
  await new Promise<void>((ready) =>
    child.stdout.on('data', (d) => {
      stdout += d
      if (stdout.includes('::error ')) ready()
    }),
  )
  child.kill('SIGINT')
  assert.is(await closed, 130)
  const lines = stdout.trimEnd().split('\n')
  assert.is(lines.length, 2, stdout)
  assert.match(lines[0], /^::error file=assets\/red one\.png,line=1,title=mod%3A redness::/)
  assert.match(lines[1], /^::notice title=mod scan::stopped by SIGINT after 1 of 2\+? files: 1 scanned: 0 safe, 1 unsafe, 0 errors/)
  assert.match(stderr, /^mod: stopped by SIGINT after 1 of 2\+? files: 1 scanned: 0 safe, 1 unsafe, 0 errors\n$/)
  child.stdin.destroy()
})

test('--json and --format json print the same; --format cannot be used with --json', async () => {
  const a = await runInProcess(['scan', 'assets', '--config', 'policy.yaml', '--json'], {env, cwd: work})
  const b = await runInProcess(['scan', 'assets', '--config', 'policy.yaml', '--format', 'json'], {env, cwd: work})
  assert.is(b.code, a.code)
  assert.equal(JSON.parse(b.stdout), JSON.parse(a.stdout))
  const both = await runInProcess(['scan', 'assets', '--json', '--format', 'sarif'], {env, cwd: work})
  assert.is(both.code, 2)
  assert.match(both.stderr, /^mod: usage: .*--format.*--json|--json.*--format/)
})

test.run()
