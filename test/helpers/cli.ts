import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'

import type {Config} from '@oclif/core'
import sharp from 'sharp'

export const ROOT = resolve(import.meta.dirname, '..', '..')
export const TOY_MODEL = join(ROOT, 'test', 'fixtures', 'models', 'toy')
export const BIN = join(ROOT, 'bin', 'run.js')

/** A path for a shell line, quoted when it needs to be (a clone's path may hold spaces): the CLI's own quoting. */
export {shellPath as shellWord} from '../../src/cli/shell-path.js'

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** Runs the built CLI (`node bin/run.js …`) with a clean MOD_* environment plus `env`. */
export function runCli(args: string[], opts: {env?: Record<string, string>; stdin?: Buffer; cwd?: string} = {}): Promise<CliRun> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? ROOT,
      env: {...base, NO_COLOR: '1', ...opts.env},
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', fail)
    child.on('close', (code) => done({code: code ?? -1, stdout, stderr}))
    child.stdin.end(opts.stdin)
  })
}

/** oclif's configuration, loaded once per test file (TEST_FILE: test/run.mjs runs several in one process). */
let config: {file: string | undefined; loaded: Promise<Config>} | undefined

/**
 * Runs a command of the built CLI in this process, as `node bin/run.js …` would (oclif's `run` with the package's
 * config, loaded once per test file): stdout and stderr are captured apart, MOD_* variables are only `env`'s
 * during the run, and the exit code is the one the command ends with (`this.exit`, `process.exitCode`, 0). It
 * saves a Node start, oclif's start and the engine's module loading per run, for tests about what a command
 * answers; what only a real process shows (stdin, signals, terminals, bin/run.js's start-up failures and their
 * exit codes) stays with runCli. An error that bin/run.js would print as `internal` is thrown instead.
 */
export async function runInProcess(args: string[], opts: {env?: Record<string, string>; cwd?: string} = {}): Promise<CliRun> {
  // oclif loads here, not with this module: most tests that import it never run a command in-process.
  const {Config: OclifConfig, Errors, run} = await import('@oclif/core')
  // oclif's help rewrites the id of the command it shows in place (`models:list` becomes `models list`), and each
  // run makes its configuration from the plugins of the one it is given: a later run no longer finds that command.
  // A file starts from a configuration of its own, not from what another file's help left.
  if (config === undefined || config.file !== process.env.TEST_FILE) config = {file: process.env.TEST_FILE, loaded: OclifConfig.load(ROOT)}
  const loaded = await config.loaded
  const savedEnv = {...process.env}
  for (const k of Object.keys(process.env)) if (k.startsWith('MOD_')) delete process.env[k]
  Object.assign(process.env, {NO_COLOR: '1'}, opts.env)
  const savedCwd = process.cwd()
  if (opts.cwd) process.chdir(opts.cwd)
  const savedExitCode = process.exitCode
  process.exitCode = undefined
  const writes = {stdout: process.stdout.write, stderr: process.stderr.write}
  const out = {stdout: '', stderr: ''}
  // Output goes to pipes, as in a child process, even when the test itself runs in a terminal.
  const restoreTty = (['stdout', 'stderr'] as const).flatMap((name) =>
    (['isTTY', 'columns', 'rows'] as const).map((prop) => {
      const own = Object.getOwnPropertyDescriptor(process[name], prop)
      Object.defineProperty(process[name], prop, {value: undefined, configurable: true, writable: true})
      return () => (own ? Object.defineProperty(process[name], prop, own) : delete (process[name] as unknown as Record<string, unknown>)[prop])
    }),
  )
  // Listeners a command leaves on the streams (a process would end with them) are removed after the run.
  const listenersBefore = (['stdout', 'stderr'] as const).map((name) => new Map(process[name].eventNames().map((e) => [e, process[name].listeners(e)])))
  for (const name of ['stdout', 'stderr'] as const) {
    process[name].write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      out[name] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined
      if (done) process.nextTick(done)
      return true
    }) as typeof process.stdout.write
  }
  let code = 0
  try {
    await run(args, loaded)
    code = Number(process.exitCode ?? 0)
  } catch (e) {
    if (!(e instanceof Errors.ExitError)) throw e
    code = e.oclif.exit ?? 1
  } finally {
    process.stdout.write = writes.stdout
    process.stderr.write = writes.stderr
    for (const restore of restoreTty) restore()
    for (const [i, name] of (['stdout', 'stderr'] as const).entries()) {
      for (const e of process[name].eventNames()) {
        const before = listenersBefore[i].get(e) ?? []
        for (const l of process[name].listeners(e)) if (!before.includes(l)) process[name].off(e, l as (...a: unknown[]) => void)
      }
    }
    process.exitCode = savedExitCode
    process.chdir(savedCwd)
    for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k]
    Object.assign(process.env, savedEnv)
  }
  return {code, ...out}
}

/** A new folder in `parent` (the temporary folder by default) and a way to remove it. */
export function tempDir(prefix = 'mod-test-', parent = tmpdir()): {path: string; remove: () => void} {
  const path = mkdtempSync(join(parent, prefix))
  return {path, remove: () => rmSync(path, {recursive: true, force: true})}
}

export function solidPng(r: number, g: number, b: number, width = 64, height = 64): Promise<Buffer> {
  return sharp({create: {width, height, channels: 3, background: {r, g, b}}}).png().toBuffer()
}

/** A policy file that adds the `redness` category the toy model can see (the toy model embeds only the colour words). */
export function writeRednessPolicy(dir: string): string {
  const path = join(dir, 'policy.yaml')
  writeFileSync(path, 'categories:\n  redness:\n    prompts: ["red"]\n    threshold: 0.5\n')
  return path
}
