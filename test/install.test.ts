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
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {engines: {node: string}}
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {packages: Record<string, Locked>}

/** The oldest Node the project supports: a package that needs more makes npm warn there. */
const oldest = semver.minVersion(pkg.engines.node)

test('the project declares the Node versions it runs on, and the running Node is one of them', () => {
  assert.ok(oldest, pkg.engines.node)
  assert.ok(semver.satisfies(process.versions.node, pkg.engines.node), `${process.versions.node} vs ${pkg.engines.node}`)
})

test('every locked package accepts the oldest supported Node and the running one (no EBADENGINE warning)', () => {
  const refused = Object.entries(lock.packages)
    .filter(([path]) => path !== '')
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
