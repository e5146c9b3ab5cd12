// README examples that must work as printed: the base64 request for a multi-megabyte photo (run with bash
// and curl against a local server), and the list of built-in categories with their parents.
import {execFile} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_CATEGORIES} from '../../src/lib/policy/defaults.js'
import {ROOT} from '../helpers/cli.js'
import {start, tempDir, testSettings, toyEngine} from './harness.js'

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
const dir = tempDir('mod-server-readme-')

test.after(() => dir.remove())

/** The README's shell command that starts with `start`, its continuation lines (after `|` or `\`) joined. */
function command(start: string): string {
  const lines = readme.split('\n')
  let i = lines.findIndex((l) => l.startsWith(start))
  assert.ok(i >= 0, `README has a line starting with ${start}`)
  const parts = [lines[i]]
  while (/[|\\]\s*$/.test(lines[i])) parts.push(lines[++i])
  return parts.join('\n')
}

test('the base64 example moderates a multi-megabyte photo as printed', async () => {
  // Noise compresses badly: a JPEG of several MB, whose base64 is far beyond one command-line argument's limit (128 KiB).
  const photo = await sharp(randomBytes(2000 * 1500 * 3), {raw: {width: 2000, height: 1500, channels: 3}}).jpeg({quality: 100}).toBuffer()
  assert.ok(photo.length > 2 * 1024 * 1024, `${photo.length} bytes`)
  writeFileSync(join(dir.path, 'beach.jpg'), photo)

  const settings = testSettings(join(dir.path, 'cache'), {apiKey: 'readme-key'})
  const engine = toyEngine(settings)
  const server = await start(engine, settings)
  try {
    const script = command(`{ printf '{"image_base64": "'`).replaceAll('localhost:8000', server.base.replace('http://', ''))
    const {stdout} = await promisify(execFile)('bash', ['-c', `set -o pipefail\n${script}`], {
      cwd: dir.path,
      env: {...process.env, KEY: 'readme-key'},
      maxBuffer: 1024 * 1024,
    })
    const result = JSON.parse(stdout)
    assert.equal([result.source, typeof result.is_safe], ['image_base64', 'boolean'])
  } finally {
    await server.stop()
    await engine.close()
  }
})

test('the README lists every built-in category with its parent', () => {
  const rows = [...readme.matchAll(/^\| `([a-z_]+)` \| (none|`([a-z_]+)`) \|$/gm)].map((m) => [m[1], m[3] ?? null])
  assert.equal(rows, DEFAULT_CATEGORIES.map((c) => [c.name, c.parent]))
})

test.run()
