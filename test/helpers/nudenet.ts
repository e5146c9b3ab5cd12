/**
 * The NudeNet model for the tests that need the real file. It is AGPL-3.0 and never committed: the tests take it
 * from NUDENET_MODEL (a path to 320n.onnx) or else test/fixtures/tmp/nudenet/320n.onnx, where .ci/run unpacks it
 * from the nudenet 3.4.2 wheel on PyPI. Where neither holds the pinned file, the tests that need it are skipped
 * (test/helpers/skip.ts) with `missing` as the reason.
 */
import {createHash} from 'node:crypto'
import {copyFile, mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {loadNudenetPreset} from '../../src/lib/signals/nudenet/manifest.js'

export const NUDENET_FIXTURE_DIR = fileURLToPath(new URL('../fixtures/models/nudenet/', import.meta.url))

/** Where the real model file may be found. */
export function nudenetSource(): string {
  return process.env.NUDENET_MODEL ?? fileURLToPath(new URL('../fixtures/tmp/nudenet/320n.onnx', import.meta.url))
}

/** The path of a verified copy of the real model, or why there is none. */
export async function realNudenetFile(): Promise<{path: string; missing?: undefined} | {path?: undefined; missing: string}> {
  const source = nudenetSource()
  const pinned = (await loadNudenetPreset()).files[0]
  let bytes: Buffer
  try {
    bytes = await readFile(source)
  } catch {
    const where = process.env.NUDENET_MODEL === undefined ? '.ci/run fetches it; or set NUDENET_MODEL to a copy of 320n.onnx' : 'NUDENET_MODEL'
    return {missing: `no NudeNet model at ${source} (${where})`}
  }
  const sha = createHash('sha256').update(bytes).digest('hex')
  if (sha !== pinned.sha256) return {missing: `${source} has sha256 ${sha}, not the pinned ${pinned.sha256}`}
  return {path: source}
}

/**
 * An installed nudenet folder holding the real model, as `models pull nudenet` leaves it (default: the generated
 * fixture folder), or why there is none.
 */
export async function installedNudenetFixture(dir = NUDENET_FIXTURE_DIR): Promise<{dir: string; missing?: undefined} | {dir?: undefined; missing: string}> {
  const found = await realNudenetFile()
  if (found.missing !== undefined) return {missing: found.missing}
  const preset = await loadNudenetPreset()
  await mkdir(dir, {recursive: true})
  await copyFile(found.path, join(dir, preset.files[0].path))
  const installed = {...preset, files: [{...preset.files[0], trust: 'pinned'}]}
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(installed, null, 2)}\n`)
  return {dir}
}
