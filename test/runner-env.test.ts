// What test/run.mjs hands its test files: none of the shell's MOD_* variables (its models, keys, ports) and none of
// its proxy variables, which mod and npm obey, so that a test's requests to 127.0.0.1 cannot go to a proxy off the
// machine. test/privacy.test.ts runs the runner on this file with such variables set. And glibc's fixed mmap
// threshold, which the runner gives the processes that run the files, and not the processes the files start. And a
// process a file leaves running, which the runner kills with the process that ran the file (test/privacy.test.ts
// checks it is gone after the run).
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {testUnless} from './helpers/skip.js'

testUnless(
  process.env.TEST_WARM_CACHE === undefined ? 'checks what test/run.mjs passes on: run it through the runner' : undefined,
  'a test file started by the runner sees no MOD_* or proxy variable of the shell',
  () => {
    const leaked = Object.keys(process.env).filter((k) => k.startsWith('MOD_') || /^(https?|no|all)_proxy$|^npm_config_(https_)?proxy$/i.test(k))
    assert.equal(leaked, [])
  },
)

testUnless(
  process.env.TEST_WARM_CACHE === undefined ? 'checks what test/run.mjs passes on: run it through the runner' : undefined,
  "the process running a test file started with glibc's mmap threshold fixed, and the file's environment (which the processes it starts inherit) does not carry it",
  () => {
    // The environment the process started with: glibc read its settings from it.
    const initial = readFileSync('/proc/self/environ', 'latin1').split('\0')
    const threshold = initial.find((v) => v.startsWith('MALLOC_MMAP_THRESHOLD_='))
    if (initial.includes('TEST_HOST_MALLOC=1')) {
      assert.is(threshold, 'MALLOC_MMAP_THRESHOLD_=131072')
      assert.is(process.env.MALLOC_MMAP_THRESHOLD_, undefined)
      assert.is(process.env.TEST_HOST_MALLOC, undefined)
    } else {
      // The shell set one: the runner keeps it, for the tests too.
      assert.is(`MALLOC_MMAP_THRESHOLD_=${process.env.MALLOC_MMAP_THRESHOLD_}`, threshold)
    }
  },
)

testUnless(
  process.env.TEST_WARM_CACHE === undefined ? 'checks what test/run.mjs does with what a file leaves: run it through the runner' : undefined,
  'leaves a process running, in a session of its own, for the runner to kill at its end',
  () => {
    // As a server a test forgot, or one of a file killed at its time limit: not in the runner's process group.
    const left = spawn('sleep', ['600'], {detached: true, stdio: 'ignore'})
    left.unref()
    assert.type(left.pid, 'number')
    process.stdout.write(`[left running] ${left.pid}\n`)
  },
)

test.run()
