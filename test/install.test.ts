// `npm ci` prints no warning that comes from this project's choices: .npmrc holds only keys npm defines, and every package in the lock runs on the
// Node versions package.json declares (otherwise npm warns EBADENGINE at every install).
import {spawnSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import semver from 'semver'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT} from './helpers/cli.js'

interface Locked {
  engines?: {node?: string} | string[]
  os?: string[]
  cpu?: string[]
}

/** Whether npm installs (and checks the engines of) a package here: one for another system or CPU it skips. */
const forHere = (p: Locked): boolean => (p.os ?? [process.platform]).includes(process.platform) && (p.cpu ?? [process.arch]).includes(process.arch)

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {engines: {node: string}}
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {packages: Record<string, Locked>}

/** The oldest Node the project supports: a package that needs more makes npm warn there. */
const oldest = semver.minVersion(pkg.engines.node)

/** The releases the smoke test runs mod on (test/smoke/node-versions.sh). */
const smoked = /^NODE_VERSIONS="([^"]*)"$/m.exec(readFileSync(join(ROOT, 'test', 'smoke', 'node-versions.sh'), 'utf8'))?.[1].split(' ') ?? []

test('the project declares the Node versions it runs on, and the smoke test runs releases of them', () => {
  assert.ok(oldest, pkg.engines.node)
  assert.ok(smoked.length >= 2, 'node-versions.sh names the releases')
  for (const v of smoked) assert.ok(semver.satisfies(v, pkg.engines.node), `${v} vs ${pkg.engines.node}`)
  // The suite itself may run on an older Node than the project supports (npm then warns EBADENGINE): say so.
  if (!semver.satisfies(process.versions.node, pkg.engines.node)) console.log(`the suite runs on Node ${process.versions.node}, outside engines ${pkg.engines.node}`)
})

test('every locked package npm installs here accepts the oldest supported Node and the running one (no EBADENGINE warning)', () => {
  const refused = Object.entries(lock.packages)
    // sharp's Windows 32-bit binary accepts Node 20 only (Node has no 32-bit Windows builds from 23 on).
    .filter(([path, p]) => path !== '' && forHere(p))
    .flatMap(([path, p]) => {
      const range = p.engines && !Array.isArray(p.engines) ? p.engines.node : undefined
      if (range === undefined) return []
      const ok = [oldest!.version, process.versions.node].every((v) => semver.satisfies(v, range, {includePrerelease: true}))
      return ok ? [] : [`${path} wants node ${range}`]
    })
  assert.equal(refused, [])
})

test('npm reads the project .npmrc without a warning: it holds only settings npm defines', () => {
  const r = spawnSync('npm', ['config', 'get', 'ignore-scripts'], {cwd: ROOT, encoding: 'utf8'})
  assert.is(r.status, 0, r.stderr)
  assert.is(r.stdout.trim(), 'true')
  assert.not.match(r.stderr, /project config/)
})

test.run()
