// Every command that prints results, with every format it takes, run below a folder holding a `.modrc.yaml`:
// stdout parses in the format asked for, and the format never silences stderr's notes (the policy found from the
// current folder, which changes verdicts, must never apply unseen). Each command's `--format json` runs as a real
// process of the built CLI (JSON was the format that silenced stderr); its other formats run in this process,
// which costs a twentieth of a Node start each, so that the file stays cheap in the suite's time.
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, runInProcess, tempDir, TOY_MODEL, type CliRun} from '../helpers/cli.js'
import {writeImages} from '../helpers/dataset.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {colourClip} from '../lib/video/helpers.js'

const dir = tempDir()
test.after(() => dir.remove())

const PLAIN = ['table', 'json', 'ndjson']

/**
 * Each command with its formats. `policy`: whether it applies the policy in force, and so names the one it found;
 * `hash` reads no policy, `models list` lists models, and `policy validate` checks the file it is given.
 */
const COMMANDS: {args: string[]; formats: string[]; policy: boolean}[] = [
  {args: ['scan', 'photos'], formats: [...PLAIN, 'sarif', 'junit', 'github'], policy: true},
  {args: ['scan-video', 'clip.mp4'], formats: PLAIN, policy: true},
  {args: ['eval', 'dataset'], formats: PLAIN, policy: true},
  {args: ['categories'], formats: PLAIN, policy: true},
  {args: ['hash', 'photos'], formats: PLAIN, policy: false},
  {args: ['models', 'list'], formats: PLAIN, policy: false},
  {args: ['policy', 'validate', '.modrc.yaml'], formats: PLAIN, policy: false},
]

/** Why stdout is not what `format` promises, or undefined when it is. */
function formatProblem(format: string, stdout: string): string | undefined {
  try {
    if (format === 'table') return stdout.trim() === '' ? 'empty' : undefined
    if (format === 'json' || format === 'sarif') JSON.parse(stdout)
    if (format === 'ndjson') {
      const lines = stdout.split('\n').filter((l) => l !== '')
      if (lines.length === 0) return 'no lines'
      for (const l of lines) JSON.parse(l)
    }
    if (format === 'junit' && !/^<\?xml[^]*<testsuites[^]*<\/testsuites>\n$/.test(stdout)) return 'not a JUnit document'
    if (format === 'github' && !stdout.split('\n').filter((l) => l !== '').every((l) => l.startsWith('::'))) return 'a line that is not a workflow command'
    return undefined
  } catch (e) {
    return (e as Error).message
  }
}

/** Runs `jobs` at most `width` at a time: the machine has two cores, shared with the other test files. */
async function pooled<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const results: T[] = []
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < jobs.length) {
      const i = next++
      results[i] = await jobs[i]()
    }
  }
  await Promise.all(Array.from({length: width}, lane))
  return results
}

test('each format parses on stdout, and the policy found is named on stderr in every one', async () => {
  writeFileSync(join(dir.path, '.modrc.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n    threshold: 0.5\n')
  await writeImages(dir.path, 'photos', [220, 30, 30], 1, 'red')
  await writeImages(dir.path, 'photos', [30, 30, 220], 1, 'blue')
  await writeImages(dir.path, 'dataset/redness', [220, 30, 30], 2)
  await writeImages(dir.path, 'dataset/safe', [30, 30, 220], 2)
  await colourClip(join(dir.path, 'clip.mp4'), ['red', 'blue'], 1, {size: '32x32', rate: 2})
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
  const runs = COMMANDS.flatMap((c) => c.formats.map((format) => ({...c, format})))
  const args = (r: (typeof runs)[number]): string[] => [...r.args, '--format', r.format]
  const results: CliRun[] = []
  // Two commands run as real processes too (scan, and categories, whose --json once silenced the note), beside the
  // in-process commands (one at a time: they share this process's stdout).
  const real = (r: (typeof runs)[number]) => r.format === 'json' && (r.args[0] === 'scan' || r.args[0] === 'categories')
  const processes = pooled(runs.flatMap((r, i) => (real(r) ? [async () => void (results[i] = await runCli(args(r), {env, cwd: dir.path}))] : [])), 2)
  for (const [i, r] of runs.entries()) if (!real(r)) results[i] = await runInProcess(args(r), {env, cwd: dir.path})
  await processes
  const note = `mod: policy: ${join(dir.path, '.modrc.yaml')} (found from the current folder; --config names another)\n`
  const problems = runs.flatMap((r, i) => {
    const {code, stdout, stderr} = results[i]
    const what = `${r.args.join(' ')} --format ${r.format}`
    const wrong = [
      ...(code === 0 || code === 1 ? [] : [`exit ${code}: ${stderr}`]),
      ...(r.policy && !stderr.includes(note) ? [`no policy note on stderr: ${JSON.stringify(stderr)}`] : []),
      ...(!r.policy && stderr.includes('mod: policy:') ? ['a policy note from a command that applies none'] : []),
      ...[formatProblem(r.format, stdout)].flatMap((p) => (p ? [`stdout: ${p}: ${JSON.stringify(stdout.slice(0, 200))}`] : [])),
    ]
    return wrong.map((w) => `${what}: ${w}`)
  })
  assert.equal(problems, [])
  // The red image and the red half of the clip are flagged: the policy found was the one applied.
  assert.is(results[runs.findIndex((r) => r.args[0] === 'scan' && r.format === 'json')].code, 1)
  assert.is(results[runs.findIndex((r) => r.args[0] === 'scan-video' && r.format === 'json')].code, 1)
})

test('--json and --ndjson print what --format json and --format ndjson print', async () => {
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
  for (const args of [['hash', 'photos'], ['categories']]) {
    for (const format of ['json', 'ndjson']) {
      const alias = await runInProcess([...args, `--${format}`], {env, cwd: dir.path})
      const named = await runInProcess([...args, '--format', format], {env, cwd: dir.path})
      assert.is(alias.stdout, named.stdout, `${args.join(' ')} --${format}`)
      assert.ok(alias.stdout.length > 0)
    }
  }
})

test.run()
