// Tests that need what a machine may lack (NudeNet's model file, the Python tools, qemu, a font): where it is
// missing, the test is skipped, counted by uvu and listed with its reason at the end of test/run.mjs's output, which
// collects the "[skip] " lines. .ci/run installs all of them, so that CI skips none.
import {test as uvuTest, type Callback, type Test} from 'uvu'

/** Counts `name` as skipped in the suite `on` (default: uvu's `test`), saying why on a line the runner collects. */
export function skip(name: string, reason: string, on: Test = uvuTest): void {
  on.skip(name)
  console.log(`[skip] ${name}: ${reason}`)
}

/** `test(name, fn)` when `missing` is undefined; otherwise the test is skipped, `missing` saying why. */
export function testUnless(missing: string | undefined, name: string, fn: Callback, on: Test = uvuTest): void {
  if (missing === undefined) on(name, fn)
  else skip(name, missing, on)
}
