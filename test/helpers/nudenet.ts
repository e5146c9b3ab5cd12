/**
 * The NudeNet model for the tests that need the real file. It is AGPL-3.0 and never committed: the tests copy
 * it into a generated installed folder, test/fixtures/models/nudenet/, from NUDENET_MODEL (a path to 320n.onnx)
 * or else /tmp/nn/nudenet/320n.onnx (the file unpacked from the nudenet 3.4.2 wheel). Where neither holds the
 * pinned file, the tests that need it are skipped, saying so on stderr.
 */
import {createHash} from 'node:crypto'
import {copyFile, mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {loadNudenetPreset} from '../../src/lib/signals/nudenet/manifest.js'

export const NUDENET_FIXTURE_DIR = fileURLToPath(new URL('../fixtures/models/nudenet/', import.meta.url))

/** Where the real model file may be found. */
export function nudenetSource(): string {
  return process.env.NUDENET_MODEL ?? '/tmp/nn/nudenet/320n.onnx'
}

/** The path of a verified copy of the real model, or why there is none. */
export async function realNudenetFile(): Promise<{path: string} | {missing: string}> {
  const source = nudenetSource()
  const pinned = (await loadNudenetPreset()).files[0]
  let bytes: Buffer
  try {
    bytes = await readFile(source)
  } catch {
    return {missing: `no NudeNet model at ${source} (set NUDENET_MODEL to a copy of 320n.onnx)`}
  }
  const sha = createHash('sha256').update(bytes).digest('hex')
  if (sha !== pinned.sha256) return {missing: `${source} has sha256 ${sha}, not the pinned ${pinned.sha256}`}
  return {path: source}
}

/**
 * An installed nudenet folder holding the real model, as `models pull nudenet` leaves it (default: the generated
 * fixture folder); undefined and a line on stderr when the file is missing.
 */
export async function installedNudenetFixture(what: string, dir = NUDENET_FIXTURE_DIR): Promise<string | undefined> {
  const found = await realNudenetFile()
  if ('missing' in found) {
    process.stderr.write(`skipped ${what}: ${found.missing}\n`)
    return undefined
  }
  const preset = await loadNudenetPreset()
  await mkdir(dir, {recursive: true})
  await copyFile(found.path, join(dir, preset.files[0].path))
  const installed = {...preset, files: [{...preset.files[0], trust: 'pinned'}]}
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(installed, null, 2)}\n`)
  return dir
}
