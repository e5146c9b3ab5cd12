// Every repeatable flag (--exclude, --threshold, --disable) takes one value per use, wherever it stands: the words
// after it stay paths. A gate that dropped a path after a flag would pass what it never scanned. The commands run
// in process: oclif parses the same argv there.
import {appendFileSync, mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {colourClip} from '../lib/video/helpers.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-flags-')
let env: Record<string, string> = {}
let clip = ''

interface Result {
  source: string
  labels: {name: string; threshold: number}[]
}

test.before(async () => {
  const blue = await solidPng(0, 0, 255, 16, 16)
  for (const folder of ['keep', 'drafts', 'more', 'last']) {
    mkdirSync(join(dir.path, folder))
    writeFileSync(join(dir.path, folder, `${folder}.png`), blue)
    writeFileSync(join(dir.path, folder, `${folder}.tmp`), blue)
  }
  const policy = writeRednessPolicy(dir.path)
  appendFileSync(policy, 'specialists: {nsfw: false}\n')
  env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_CONFIG: policy}
  clip = await colourClip(join(dir.path, 'clip.mp4'), ['blue'], 1)
})

test.after(() => dir.remove())

async function scan(args: string[]): Promise<{code: number; sources: string[]; results: Result[]; stderr: string}> {
  const r = await runInProcess(['scan', ...args, '--json'], {env, cwd: dir.path})
  const results = r.stdout ? (JSON.parse(r.stdout) as Result[]) : []
  return {code: r.code, sources: results.map((x) => x.source).sort(), results, stderr: r.stderr}
}

const ALL = ['drafts/drafts.png', 'keep/keep.png', 'last/last.png', 'more/more.png']

function thresholdOf(results: Result[], name: string): number | undefined {
  return results[0].labels.find((l) => l.name === name)?.threshold
}

test('scan: each repeatable flag between paths takes one value; the next word is still a path', async () => {
  const r = await scan(['keep', '--exclude', '*.tmp', 'drafts', '--disable', 'weapons', 'more', '--threshold', 'redness=0.7', 'last'])
  assert.is(r.code, 0, r.stderr)
  assert.equal(r.sources, ALL)
  assert.is(thresholdOf(r.results, 'redness'), 0.7)
  assert.is(thresholdOf(r.results, 'weapons'), undefined)
})

test('scan: the --flag=value form between paths', async () => {
  const r = await scan(['keep', '--exclude=*.tmp', 'drafts', '--disable=weapons', 'more', '--threshold=redness=0.7', 'last'])
  assert.is(r.code, 0, r.stderr)
  assert.equal(r.sources, ALL)
  assert.is(thresholdOf(r.results, 'redness'), 0.7)
  assert.is(thresholdOf(r.results, 'weapons'), undefined)
})

test('scan: flags before the paths, each repeated', async () => {
  const r = await scan(['--disable', 'weapons', '--disable', 'drugs', '--exclude', '*.tmp', '--exclude', 'more/', '--threshold', 'redness=0.7', '--threshold', 'tobacco=0.9', 'keep', 'drafts', 'more', 'last'])
  assert.is(r.code, 0, r.stderr)
  // more/ is a folder given on the command line: the pattern matches below it, not the folder itself.
  assert.equal(r.sources, ALL)
  assert.is(thresholdOf(r.results, 'redness'), 0.7)
  assert.is(thresholdOf(r.results, 'tobacco'), 0.9)
  assert.is(thresholdOf(r.results, 'weapons'), undefined)
  assert.is(thresholdOf(r.results, 'drugs'), undefined)
})

test('scan: flags after the paths, and a .tmp file given by name is excluded', async () => {
  const r = await scan(['keep', 'drafts', 'more', 'last', 'keep/keep.tmp', '--exclude', '*.tmp', '--threshold', 'redness=0.7', '--disable', 'weapons'])
  assert.is(r.code, 0, r.stderr)
  assert.equal(r.sources, ALL)
  assert.is(thresholdOf(r.results, 'redness'), 0.7)
})

test('scan: a repeatable flag with no value left fails loudly, naming it', async () => {
  const r = await runInProcess(['scan', 'keep', '--disable'], {env, cwd: dir.path})
  assert.is(r.code, 2)
  assert.is(r.stdout, '')
  assert.match(r.stderr, /^mod: usage: .*--disable/)
})

test('scan with no path: our usage error, exit 2, no note about multiple values', async () => {
  for (const args of [['scan'], ['scan', '--disable', 'suggestive'], ['scan', '--exclude', '*.tmp', '--threshold', 'nudity=0.3']]) {
    const r = await runInProcess(args, {env, cwd: dir.path})
    assert.is(r.code, 2, args.join(' '))
    assert.is(r.stdout, '')
    assert.is(r.stderr, 'mod: usage: mod scan needs <paths...>: files, folders or - (stdin); none with --files-from; see mod scan --help\n')
  }
})

test('scan-video: --threshold and --disable before or after the file', async () => {
  for (const args of [
    ['--disable', 'weapons', '--threshold', 'redness=0.7', clip],
    [clip, '--disable', 'weapons', '--threshold', 'redness=0.7'],
    ['--disable=weapons', clip, '--threshold=redness=0.7'],
  ]) {
    const r = await runInProcess(['scan-video', ...args, '--json'], {env, cwd: dir.path})
    assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    assert.is(JSON.parse(r.stdout).source, clip)
  }
  const extra = await runInProcess(['scan-video', '--disable', 'weapons', clip, clip], {env, cwd: dir.path})
  assert.is(extra.code, 2)
  assert.match(extra.stderr, /^mod: usage: Unexpected argument/)
})

test('policy show: repeated --threshold and --disable in any order, and a stray word is an error', async () => {
  const r = await runInProcess(['policy', 'show', '--disable', 'weapons', '--threshold', 'redness=0.7', '--disable=drugs', '--threshold=tobacco=0.9'], {env, cwd: dir.path})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, /redness:[\s\S]*threshold: 0\.7/)
  assert.match(r.stdout, /tobacco:[\s\S]*threshold: 0\.9/)
  assert.match(r.stdout, /weapons:\n\s+enabled: false/)
  assert.match(r.stdout, /drugs:\n\s+enabled: false/)
  const stray = await runInProcess(['policy', 'show', '--disable', 'weapons', 'drugs'], {env, cwd: dir.path})
  assert.is(stray.code, 2)
  assert.match(stray.stderr, /^mod: usage: Unexpected argument: drugs/)
})

test.run()
