/** The model presets shipped in the repository's models/ folder, and where each one is installed. */
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {PRESETS, type PresetName} from '../policy/types.js'
import {loadManifest, readManifestFile} from './manifest.js'
import type {FileTrust, Manifest, ModelFile} from './manifest-types.js'

/** This file sits three levels below the package root both as src/lib/model/*.ts and as dist/lib/model/*.js. */
const MODELS_DIR = new URL('../../../models/', import.meta.url)
/** The shipped models/ folder: preset manifests and the CLIP tokenizer every preset uses. */
export const MODELS_DIR_PATH = fileURLToPath(MODELS_DIR)

export interface PresetStatus {
  preset: PresetName
  /** The model id of the preset's manifest. */
  id: string
  installed: boolean
  dir: string
  /** Bytes of the installed files, or of the download when the preset manifest knows every file's size. */
  size?: number
  /** Bytes a `models pull` of the fp32 files downloads, when the preset manifest knows every file's size. */
  download?: number
  /** Installed presets only: the files checked against a sha256 the preset pins, and those trusted on first use. */
  trust?: {pinned: string[]; firstUse: string[]}
}

export function presetManifestPath(preset: PresetName): string {
  return fileURLToPath(new URL(`${preset}.json`, MODELS_DIR))
}

export function loadPresetManifest(preset: PresetName): Promise<Manifest> {
  return readManifestFile(presetManifestPath(preset))
}

/** MOD_MODEL_DIR / --model-dir wins; otherwise the preset's folder under the cache. */
export function resolveModelDir(settings: {modelDir?: string; cacheDir: string}, preset: PresetName): string {
  return settings.modelDir ?? join(settings.cacheDir, preset)
}

function totalSize(manifest: Manifest): number | undefined {
  let total = 0
  for (const f of manifest.files) {
    if (f.size === undefined) return undefined
    total += f.size
  }
  return total
}

/**
 * How each installed file was checked. A file installed before pulls recorded it counts as pinned only when its
 * hash is the one the preset pins now; a variant encoder without a record was not installed.
 */
function trustOf(installed: Manifest, wanted: Manifest): NonNullable<PresetStatus['trust']> {
  const pins = new Map(wanted.files.map((f) => [f.path, f.sha256]))
  const trust = {pinned: [] as string[], firstUse: [] as string[]}
  const record = (f: ModelFile, how: FileTrust | undefined): void => {
    if (how === 'pinned') trust.pinned.push(f.path)
    else if (how === 'first_use') trust.firstUse.push(f.path)
  }
  for (const f of installed.files) {
    const pinned = f.sha256 !== undefined && pins.get(f.path) === f.sha256
    record(f, f.trust ?? (pinned ? 'pinned' : 'first_use'))
  }
  for (const v of Object.values(installed.variants ?? {})) {
    record(v.image_encoder, v.image_encoder.trust)
    record(v.text_encoder, v.text_encoder.trust)
  }
  return trust
}

async function installedManifest(dir: string, preset: PresetName): Promise<Manifest | undefined> {
  try {
    return await loadManifest(dir, preset)
  } catch {
    return undefined
  }
}

/** Every preset with its model id and whether a complete copy is installed under cacheDir. */
export async function listPresets(cacheDir: string): Promise<PresetStatus[]> {
  return Promise.all(
    PRESETS.map(async (preset) => {
      const wanted = await loadPresetManifest(preset)
      const dir = join(cacheDir, preset)
      const installed = await installedManifest(dir, preset)
      const ok = installed?.id === wanted.id
      const size = totalSize(ok && installed ? installed : wanted)
      const download = totalSize(wanted)
      return {
        preset,
        id: wanted.id,
        installed: ok,
        dir,
        ...(size === undefined ? {} : {size}),
        ...(download === undefined ? {} : {download}),
        ...(ok && installed ? {trust: trustOf(installed, wanted)} : {}),
      }
    }),
  )
}
