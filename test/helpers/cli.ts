import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'

import sharp from 'sharp'

export const ROOT = resolve(import.meta.dirname, '..', '..')
export const TOY_MODEL = join(ROOT, 'test', 'fixtures', 'models', 'toy')
export const BIN = join(ROOT, 'bin', 'run.js')

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

export function tempDir(prefix = 'mod-test-'): {path: string; remove: () => void} {
  const path = mkdtempSync(join(tmpdir(), prefix))
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
