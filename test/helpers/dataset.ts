import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import sharp from 'sharp'
import * as assert from 'uvu/assert'

import type {CliRun} from './cli.js'

/** A PNG of one colour with deterministic noise of ±spread per channel (a small linear congruential generator). */
export function noisyPng(r: number, g: number, b: number, seed: number, spread = 8, size = 32): Promise<Buffer> {
  let state = (seed * 2654435761 + 1) >>> 0
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 2 ** 32
  }
  const data = Buffer.alloc(size * size * 3)
  const base = [r, g, b]
  for (let i = 0; i < data.length; i++) {
    data[i] = Math.max(0, Math.min(255, Math.round(base[i % 3] + (next() * 2 - 1) * spread)))
  }
  return sharp(data, {raw: {width: size, height: size, channels: 3}}).png().toBuffer()
}

/** Writes `count` noisy images of one colour as <root>/<folder>/<prefix><i>.png. */
export async function writeImages(root: string, folder: string, rgb: [number, number, number], count: number, prefix = 'img', seed = 0): Promise<string[]> {
  const paths: string[] = []
  for (let i = 0; i < count; i++) {
    const path = join(root, folder, `${prefix}${i}.png`)
    mkdirSync(dirname(path), {recursive: true})
    writeFileSync(path, await noisyPng(...rgb, seed * 1000 + i))
    paths.push(path)
  }
  return paths
}

/**
 * A run refused for its `--out` file, `target`, of another kind than it writes (`kind`: `a head (a JSON object)`):
 * exit 2 before its `step` began, nothing on stdout, the file as it was (`before`).
 */
export function assertOutRefused(r: CliRun, target: string, before: Buffer, kind: {is: string; replaces: string}, step: string): void {
  assert.equal([r.code, r.stdout], [2, ''], r.stderr)
  assert.match(
    r.stderr,
    `mod: bad_request: --out ${target}: the file there is not ${kind.is}, and ${kind.replaces} replaces only ${kind.replaces} (a shell pattern after --out names its first match): give a new file name\n`,
  )
  assert.not.match(r.stderr, `${step}:`)
  assert.equal(readFileSync(target), before)
}
