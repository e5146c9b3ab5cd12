import {readFileSync} from 'node:fs'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {compiledModule, TARGET} from '../../../../scripts/pdq/wasm.js'

test('the PDQ kernels in kernels-wasm.ts are kernels.wat compiled (run scripts/pdq/wasm.ts after editing the .wat)', async () => {
  assert.is(readFileSync(TARGET, 'utf8'), await compiledModule())
})

test.run()
