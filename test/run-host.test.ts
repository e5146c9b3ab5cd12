// test/run-host.mjs, the process test/run.mjs runs test files in one after another: each file starts as it would in
// a process of its own (environment, working folder, process.argv[1], exit code, listeners), a failing file says so,
// and tests declared after a file's test.run() fail it instead of running unseen with the next file.
import {spawn} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type {Readable} from 'node:stream'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT, tempDir} from './helpers/cli.js'

const MARK = '\u0000mod-test-file-end\u0000'
const dir = tempDir()
test.after(() => dir.remove())

// The same uvu module as the host's: files outside the repository cannot resolve the bare name.
const UVU = import.meta.resolve('uvu')
const ASSERT = import.meta.resolve('uvu/assert')

function testFile(name: string, body: string): string {
  const path = join(dir.path, name)
  writeFileSync(path, `import {test} from ${JSON.stringify(UVU)}\nimport * as assert from ${JSON.stringify(ASSERT)}\n${body}\n`)
  return path
}

/** Runs `files` in one host; resolves with each file's output (stdout then stderr) and mark ('0' or '1'). */
function runHost(files: {file: string; env?: Record<string, string>}[]): Promise<{out: string; mark: string}[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'test', 'run-host.mjs')], {cwd: ROOT, env: {...process.env, NO_COLOR: '1'}, stdio: ['ignore', 'pipe', 'pipe', 'pipe']})
    let out = ''
    let err = ''
    ;(child.stdout as Readable).on('data', (d) => (out += d))
    ;(child.stderr as Readable).on('data', (d) => (err += d))
    child.on('error', reject)
    child.on('close', () => {
      const outs = out.split(MARK)
      const errs = err.split(MARK)
      resolve(files.map((_, i) => ({out: `${outs[i].replace(/^[01]\n/, '')}${errs[i].replace(/^\n/, '')}`, mark: outs[i + 1]?.[0] ?? 'none'})))
    })
    const fd3 = child.stdio[3] as NodeJS.WritableStream
    for (const f of files) fd3.write(`${JSON.stringify({file: f.file, env: f.env ?? {}})}\n`)
    fd3.end()
  })
}

test('a file starts as in a process of its own, whatever the file before it changed', async () => {
  const messy = testFile(
    'messy.test.mjs',
    `test('changes the process', () => {
  process.env.LEFT_BEHIND = 'yes'
  process.chdir('/')
  process.exitCode = 3
  process.on('exit', () => console.log("the first file's exit listener ran"))
})
test.run()`,
  )
  const clean = testFile(
    'clean.test.mjs',
    `test('sees a new process', () => {
  assert.is(process.env.LEFT_BEHIND, undefined)
  assert.is(process.env.OWN_VARIABLE, 'mine')
  assert.is(process.cwd(), ${JSON.stringify(ROOT.replace(/\/$/, ''))})
  assert.is(process.exitCode, undefined)
  assert.is(process.argv[1], ${JSON.stringify(join(dir.path, 'clean.test.mjs'))})
  console.log('exit listeners', process.listenerCount('exit'))
})
test.run()`,
  )
  const listeners = (out: string) => /exit listeners (\d+)/.exec(out)?.[1]
  const [alone] = await runHost([{file: clean, env: {OWN_VARIABLE: 'mine'}}])
  const [first, second] = await runHost([{file: messy}, {file: clean, env: {OWN_VARIABLE: 'mine'}}])
  assert.is(alone.mark, '0', alone.out)
  // uvu sets the exit code when its tests end, over the one the test left: the file passed, as in its own process.
  assert.is(first.mark, '0', first.out)
  assert.is(second.mark, '0', second.out)
  assert.is(listeners(second.out), listeners(alone.out))
  assert.not.match(second.out, "the first file's exit listener ran")
})

test('a failing test marks its file failed; a file that throws while loading too, and the next file still runs', async () => {
  const failing = testFile('failing.test.mjs', `test('fails', () => assert.is(1, 2))\ntest.run()`)
  const broken = testFile('broken.test.mjs', `throw new Error('cannot load')`)
  const passing = testFile('passing.test.mjs', `test('passes', () => {})\ntest.run()`)
  const [a, b, c] = await runHost([{file: failing}, {file: broken}, {file: passing}])
  assert.is(a.mark, '1')
  assert.match(a.out, 'FAIL')
  assert.is(b.mark, '1')
  assert.match(b.out, 'Error: cannot load')
  assert.is(c.mark, '0', c.out)
})

test("tests declared after test.run() fail their file and do not run with the next file's", async () => {
  const late = testFile('late.test.mjs', `test('on time', () => {})\ntest.run()\ntest('late', () => {})`)
  const next = testFile('next.test.mjs', `test('only this', () => {})\ntest.run()`)
  const [a, b] = await runHost([{file: late}, {file: next}])
  assert.is(a.mark, '1', a.out)
  assert.match(a.out, "[run-host] 1 tests declared after test.run(): a file's own process never runs them")
  assert.is(b.mark, '0', b.out)
  assert.match(b.out, /Total:\s+1\n/)
})

test.run()
