import * as assert from 'uvu/assert'

import {ModError} from '../../src/lib/errors.js'

/** The ModError that `work` rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(work: Promise<unknown>): Promise<ModError> {
  const e = await work.then(
    () => undefined,
    (err: unknown) => err,
  )
  assert.instance(e, ModError, 'expected a rejection with a ModError')
  return e as ModError
}
