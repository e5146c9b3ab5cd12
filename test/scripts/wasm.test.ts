import {readFileSync} from 'node:fs'
import {relative} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {compiledModule, MODULES} from '../../scripts/wasm.js'

for (const m of MODULES) {
  test(`${relative(process.cwd(), m.target)} is its .wat compiled (run scripts/wasm.ts after editing the .wat)`, async () => {
    assert.is(readFileSync(m.target, 'utf8'), await compiledModule(m))
  })
}

test.run()
