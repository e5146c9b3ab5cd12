import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {MOD_VARIABLES, unknownVariables} from '../../../src/lib/config/variables.js'
import {runInProcess} from '../../helpers/cli.js'

const SRC = join(import.meta.dirname, '..', '..', '..', 'src')

/** Every MOD_* name written in the sources, but in the list itself. */
function namesInSources(dir: string): Set<string> {
  const names = new Set<string>()
  for (const entry of readdirSync(dir, {withFileTypes: true, recursive: true})) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name === 'variables.ts') continue
    for (const m of readFileSync(join(entry.parentPath, entry.name), 'utf8').matchAll(/\bMOD_[A-Z0-9_]*[A-Z0-9]\b/g)) names.add(m[0])
  }
  return names
}

test('the list of variables is every MOD_* name the sources read', () => {
  assert.equal([...MOD_VARIABLES].sort(), [...namesInSources(SRC)].sort())
})

test('docs/operations.md has a row of its variables table for every MOD_* variable mod reads', () => {
  const doc = readFileSync(join(SRC, '..', 'docs', 'operations.md'), 'utf8')
  // The first cell of each table row: one variable, or a few sharing a row (`MOD_HOST`, `MOD_PORT`, `MOD_WORKERS`).
  const rows = new Set([...doc.matchAll(/^\| ([^|]*MOD_[^|]*) \|/gm)].flatMap((m) => [...m[1].matchAll(/`(MOD_[A-Z0-9_]+)`/g)].map((n) => n[1])))
  assert.equal(MOD_VARIABLES.filter((name) => !rows.has(name)), [])
})

test('a MOD_* name mod does not read is one warning line on stderr, with the variable it likely meant; the command goes on', async () => {
  assert.equal(unknownVariables({MOD_API_KEY: 'k', MOD_APIKEY: 'k', PATH: '/bin'}), ['MOD_APIKEY is not a variable mod reads, and is ignored (did you mean MOD_API_KEY?)'])
  const r = await runInProcess(['categories'], {env: {MOD_WORKER: '2'}})
  assert.is(r.code, 0)
  assert.is(r.stderr.split('\n')[0], 'mod: warning: MOD_WORKER is not a variable mod reads, and is ignored (did you mean MOD_WORKERS?)')
})

test.run()
