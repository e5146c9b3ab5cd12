import {spawnSync} from 'node:child_process'
import {existsSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {ROOT} from './cli.js'

/**
 * The Python tools the tests check our output with: the real pre-commit, junitparser reading JUnit XML, and lxml
 * validating it against an XML schema.
 */
const PACKAGES = ['pre-commit==4.*', 'junitparser==4.*', 'lxml==6.*']
const VENV = join(ROOT, 'test', 'fixtures', 'tmp', 'pyvenv')
const READY = join(VENV, 'ready')

/**
 * The python of a virtual environment holding PACKAGES, made on first use with pip (.ci/run makes it before the
 * tests; later runs are offline). Test files that run at once each build in their own folder and rename it into
 * place, so no one sees half an environment; the tools are run as `python -m`, which a moved venv keeps working.
 * `skip` says why there is none (no venv module, PyPI not reachable).
 */
export function pythonTools(): {python: string} | {skip: string} {
  const python = join(VENV, 'bin', 'python')
  if (existsSync(READY) && readFileSync(READY, 'utf8') === PACKAGES.join('\n')) return {python}
  const tmp = `${VENV}.${process.pid}`
  rmSync(tmp, {recursive: true, force: true})
  const made = spawnSync('python3', ['-m', 'venv', tmp], {encoding: 'utf8'})
  if (made.status !== 0) return {skip: `python3 -m venv failed: ${(made.stderr || made.error?.message || '').trim()}`}
  const pip = spawnSync(join(tmp, 'bin', 'python'), ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', ...PACKAGES], {encoding: 'utf8'})
  if (pip.status !== 0) {
    rmSync(tmp, {recursive: true, force: true})
    return {skip: `pip could not install ${PACKAGES.join(', ')}: ${pip.stderr.trim().split('\n').slice(-1)[0]}`}
  }
  writeFileSync(join(tmp, 'ready'), PACKAGES.join('\n'))
  const ready = () => existsSync(READY) && readFileSync(READY, 'utf8') === PACKAGES.join('\n')
  if (!ready()) {
    rmSync(VENV, {recursive: true, force: true})
    try {
      renameSync(tmp, VENV)
    } catch (e) {
      // Another test file put its environment in place first: use that one.
      if (!ready()) throw e
    }
  }
  rmSync(tmp, {recursive: true, force: true})
  return {python}
}
