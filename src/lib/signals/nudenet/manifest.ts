/**
 * The NudeNet add-on's manifest: models/nudenet.json in the repository (what `mod models pull nudenet`
 * downloads) and manifest.json in the installed folder (written by the pull, last). A second kind of model
 * manifest beside the CLIP presets': `kind: detector`, one ONNX file, and the licence a user accepts by pulling.
 */
import {readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {ModError} from '../../errors.js'
import {isModelId, MANIFEST_FILE, MODEL_ID_RULE} from '../../model/manifest.js'
import type {ModelFile} from '../../model/manifest-types.js'
import type {Addon, AddonStatus} from '../signal.js'

/** The name users pull it by, and its folder under the cache. */
export const NUDENET = 'nudenet'

export interface DetectorManifest {
  kind: 'detector'
  id: string
  /** SPDX identifier of the model's licence. */
  licence: string
  /** One file, role `detector`. */
  files: [ModelFile]
  source?: string
}

/** What the AGPL means for someone who pulls the model, printed before the download. */
export const NUDENET_LICENCE_NOTE =
  'NudeNet is licensed AGPL-3.0: mod does not ship it (`mod models pull nudenet` downloads it from its authors, ' +
  '`mod models add nudenet <file>` installs a copy you have); if you offer mod with it to others over a network, ' +
  'the AGPL asks you to offer them its source as well'

/** This file sits four levels below the package root both as src/…/*.ts and dist/…/*.js. */
export function nudenetPresetPath(): string {
  return fileURLToPath(new URL('../../../../models/nudenet.json', import.meta.url))
}

function invalid(path: string, what: string): ModError {
  return new ModError('invalid_config', `${path} is not a detector manifest: ${what}`)
}

/** Reads and checks a detector manifest: kind, id, licence and one `detector` file with a size and sha256. */
export async function readDetectorManifest(path: string): Promise<DetectorManifest> {
  let m: Partial<DetectorManifest>
  try {
    m = JSON.parse(await readFile(path, 'utf8')) as Partial<DetectorManifest>
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new ModError('model_missing', `${path} does not exist`)
    throw new ModError('invalid_config', `${path} cannot be read: ${code ?? (e as Error).message}`)
  }
  if (m.kind !== 'detector') throw invalid(path, 'kind must be "detector"')
  if (typeof m.id !== 'string' || typeof m.licence !== 'string') throw invalid(path, 'id and licence must be strings')
  if (!isModelId(m.id)) throw invalid(path, `id must be ${MODEL_ID_RULE}`)
  const f = Array.isArray(m.files) && m.files.length === 1 ? m.files[0] : undefined
  if (!f || f.role !== 'detector' || typeof f.path !== 'string' || !/^[\w-][\w.-]*$/.test(f.path)) {
    throw invalid(path, 'files must hold one file with role "detector" and a plain file name')
  }
  if (typeof f.size !== 'number' || typeof f.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(f.sha256)) {
    throw invalid(path, 'the detector file needs a size and a sha256')
  }
  return m as DetectorManifest
}

export function loadNudenetPreset(): Promise<DetectorManifest> {
  return readDetectorManifest(nudenetPresetPath())
}

/** Where the add-on installs: `<cacheDir>/nudenet`. */
export function nudenetDir(cacheDir: string): string {
  return join(cacheDir, NUDENET)
}

/** The installed manifest, or undefined when the folder holds none (not installed, or a pull under way). */
export async function installedNudenet(dir: string): Promise<DetectorManifest | undefined> {
  try {
    return await readDetectorManifest(join(dir, MANIFEST_FILE))
  } catch (e) {
    if (e instanceof ModError && e.code === 'model_missing') return undefined
    throw e
  }
}

/** The NudeNet add-on as `models list` shows it: installed when its folder holds the manifest a pull writes last. */
export async function nudenetStatus(cacheDir: string): Promise<AddonStatus> {
  const wanted = await loadNudenetPreset()
  const dir = nudenetDir(cacheDir)
  const installed = await installedNudenet(dir).catch(() => undefined)
  const file = wanted.files[0]
  // The size, not the sha256: listing stays instant, and a truncated or replaced file still shows.
  const onDisk = installed ? await stat(join(dir, installed.files[0].path)).catch(() => undefined) : undefined
  return {
    name: NUDENET,
    id: wanted.id,
    kind: wanted.kind,
    licence: wanted.licence,
    installed: installed !== undefined,
    dir,
    size: file.size as number,
    ...(installed ? {verified: installed.files[0].sha256 === file.sha256 && onDisk?.size === file.size} : {}),
  }
}

/** The add-on as `mod models pull`, `add` and `list` know it. */
export const nudenetAddon: Addon = {
  name: NUDENET,
  notice: `${NUDENET_LICENCE_NOTE}.`,
  offlineCopy: {file: './320n.onnx', where: 'the PyPI wheel nudenet 3.4.2 holds it'},
  help:
    "nudenet is an add-on you pull on purpose: NudeNet's body-part detector (11.59 MiB, licensed AGPL-3.0, so mod does not ship it; the pull prints one line saying what the licence means before it downloads). Without network, `mod models add nudenet ./320n.onnx` installs a copy you have (the PyPI wheel nudenet 3.4.2 holds it). Once installed, every scan uses it as a second opinion on the NSFW specialist's nudity, sexual_activity and suggestive scores, and results list the parts it found as `regions` with boxes in image pixels.",
  addHelp:
    "nudenet: NudeNet's 320n.onnx (11.59 MiB, AGPL-3.0; the PyPI wheel nudenet 3.4.2 holds it as nudenet/320n.onnx). The copy must match the size and sha256 the add-on's manifest pins: it is checked while it is copied into <cache-dir>/nudenet, synced and moved into place, and the folder counts as installed once its manifest.json is written, last. A file that does not match is refused and nothing changes. `mod models list` then shows it installed and verified.",
  manifest: loadNudenetPreset,
  status: nudenetStatus,
}
