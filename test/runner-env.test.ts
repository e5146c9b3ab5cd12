// What test/run.mjs hands its test files: none of the shell's MOD_* variables (its models, keys, ports) and none of
// its proxy variables, which mod and npm obey, so that a test's requests to 127.0.0.1 cannot go to a proxy off the
// machine. test/privacy.test.ts runs the runner on this file with such variables set.
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

test.run()
