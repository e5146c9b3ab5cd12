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

const ready = () => existsSync(READY) && readFileSync(READY, 'utf8') === PACKAGES.join('\n')

/**
 * For the tests: the python of the virtual environment holding PACKAGES, or why there is none. Tests never make it:
 * that needs PyPI, and a test reaches nothing beyond 127.0.0.1. `.ci/run` makes it first (makePythonTools).
 */
export function pythonTools(): {python: string} | {skip: string} {
  if (ready()) return {python: join(VENV, 'bin', 'python')}
  return {skip: `no Python tools in ${VENV}: make them with \`node --import tsx -e "(await import('./test/helpers/python-tools.ts')).makePythonTools()"\` (.ci/run does, with PyPI)`}
}

/**
 * Makes the virtual environment of PACKAGES with pip from PyPI, unless it is there: what .ci/run does before the
 * tests. It is built in a folder of its own and renamed into place, so nothing sees half an environment; the tools
 * are run as `python -m`, which a moved venv keeps working. `skip` says why there is none (no venv module, no PyPI).
 */
export function makePythonTools(): {python: string} | {skip: string} {
  const python = join(VENV, 'bin', 'python')
  if (ready()) return {python}
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
  rmSync(VENV, {recursive: true, force: true})
  renameSync(tmp, VENV)
  return {python}
}
