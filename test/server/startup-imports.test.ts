// What a server process loads before its first request: undici (about 110 modules, 80 ms of CPU in every process and
// worker `mod serve` starts) only once a URL is fetched or a job calls back, not with the server's modules.
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT} from '../helpers/cli.js'

/** The packages of node_modules a fresh process has loaded after importing `modules` of the build. */
function loadedPackages(modules: string[]): string[] {
  const imports = modules.map((m) => `await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', m)).href)})`).join('\n')
  const script = `${imports}
const {createRequire} = await import('node:module')
const names = Object.keys(createRequire(import.meta.url).cache).map((p) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(p)?.[1]).filter(Boolean)
process.stdout.write(JSON.stringify([...new Set(names)].sort()))`
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {cwd: ROOT, encoding: 'utf8'})
  assert.is(run.status, 0, run.stderr)
  return JSON.parse(run.stdout) as string[]
}

test('the server and its URL fetcher load without undici; the CLI client still has it', () => {
  const server = loadedPackages(['server/app.js', 'lib/fetch/url.js', 'lib/fetch/callback.js'])
  // Loaded at all: the check sees the server's CommonJS dependencies.
  assert.ok(server.includes('pino'), server.join(' '))
  assert.not.ok(server.includes('undici'), server.join(' '))
  assert.ok(loadedPackages(['cli/remote/client.js']).includes('undici'))
})

test.run()
