/** Reading and checking a model folder's manifest.json (the layout is in docs/models.md, Presets and models). */
import {readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {ModError} from '../errors.js'
import type {FileRole, FileTrust, Manifest, ModelFile, Precision, Preprocessing} from './manifest-types.js'

export const MANIFEST_FILE = 'manifest.json'

const ROLES: readonly FileRole[] = ['image_encoder', 'text_encoder', 'tokenizer', 'config']
/**
 * Relative, forward-slash paths whose segments do not start with a dot: pull writes to them, so they must stay
 * inside the folder and clear of its own `.partial/` and `manifest.json`.
 */
const SAFE_PATH = /^[\w-][\w.-]*(?:\/[\w-][\w.-]*)*$/
const SHA256 = /^[0-9a-f]{64}$/
/**
 * A model id names folders in the cache (`prompts/<id>/`, which `mod models remove` deletes): one plain name, not
 * `.` or `..`, no separator, so that it can never lead out of them.
 */
const MODEL_ID = /^[\w-][\w.-]{0,127}$/
export const MODEL_ID_RULE = "a name of letters, digits, '-', '_' and '.' that does not start with '.', at most 128 characters"

export function isModelId(id: unknown): id is string {
  return typeof id === 'string' && MODEL_ID.test(id)
}

type Json = Record<string, unknown>

function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Collects the first problem with a field as `where: field: expected …`. */
function checker(where: string) {
  const fail = (field: string, expected: string): never => {
    throw new ModError('invalid_config', `${where}: ${field}: expected ${expected}`)
  }
  return {
    fail,
    record(v: unknown, field: string): Json {
      return isRecord(v) ? v : fail(field, 'an object')
    },
    string(v: unknown, field: string): string {
      return typeof v === 'string' && v.trim() !== '' ? v : fail(field, 'a non-empty string')
    },
    count(v: unknown, field: string, min = 1): number {
      return typeof v === 'number' && Number.isInteger(v) && v >= min ? v : fail(field, `a whole number >= ${min}`)
    },
    triple(v: unknown, field: string, positive: boolean): [number, number, number] {
      const ok =
        Array.isArray(v) &&
        v.length === 3 &&
        v.every((x) => typeof x === 'number' && Number.isFinite(x) && (!positive || x > 0))
      return ok ? (v as [number, number, number]) : fail(field, `three ${positive ? 'positive ' : ''}numbers`)
    },
  }
}

function parseFile(c: ReturnType<typeof checker>, v: unknown, field: string): ModelFile {
  const f = c.record(v, field)
  const path = c.string(f.path, `${field}.path`)
  if (!SAFE_PATH.test(path) || path === MANIFEST_FILE) c.fail(`${field}.path`, 'a relative path inside the model folder')
  const role = f.role as FileRole
  if (!ROLES.includes(role)) c.fail(`${field}.role`, `one of ${ROLES.join(', ')}`)
  const file: ModelFile = {path, role}
  if (f.url !== undefined) {
    const url = c.string(f.url, `${field}.url`)
    if (!/^https?:\/\//i.test(url)) c.fail(`${field}.url`, 'an http(s) URL')
    file.url = url
  }
  if (f.size !== undefined) file.size = c.count(f.size, `${field}.size`, 0)
  if (f.sha256 !== undefined) {
    if (typeof f.sha256 !== 'string' || !SHA256.test(f.sha256)) c.fail(`${field}.sha256`, '64 lower-case hex digits')
    file.sha256 = f.sha256 as string
  }
  if (f.trust !== undefined) {
    if (f.trust !== 'pinned' && f.trust !== 'first_use') c.fail(`${field}.trust`, 'pinned or first_use')
    file.trust = f.trust as FileTrust
  }
  return file
}

function parsePreprocess(c: ReturnType<typeof checker>, v: unknown): Preprocessing {
  const p = c.record(v, 'preprocess')
  const resample = p.resample
  if (resample !== 'bicubic' && resample !== 'bilinear') c.fail('preprocess.resample', '"bicubic" or "bilinear"')
  const resize = c.count(p.resize, 'preprocess.resize')
  const crop = c.count(p.crop, 'preprocess.crop')
  if (crop > resize) c.fail('preprocess.crop', `at most preprocess.resize (${resize})`)
  return {
    resize,
    crop,
    mean: c.triple(p.mean, 'preprocess.mean', false),
    std: c.triple(p.std, 'preprocess.std', true),
    resample: resample as Preprocessing['resample'],
  }
}

function parseIo(c: ReturnType<typeof checker>, v: unknown, field: string): {input: string; output: string} {
  const io = c.record(v, field)
  return {input: c.string(io.input, `${field}.input`), output: c.string(io.output, `${field}.output`)}
}

/** Checks a parsed manifest.json; `where` (its path) prefixes every message. Unknown extra fields are kept out. */
export function parseManifest(value: unknown, where: string): Manifest {
  const c = checker(where)
  const m = c.record(value, 'manifest')
  if (m.family !== 'clip') c.fail('family', '"clip"')
  if (!Array.isArray(m.files) || m.files.length === 0) c.fail('files', 'a non-empty list')
  const files = (m.files as unknown[]).map((f, i) => parseFile(c, f, `files[${i}]`))
  for (const role of ['image_encoder', 'text_encoder'] as const) {
    if (files.filter((f) => f.role === role).length !== 1) c.fail('files', `exactly one file with role "${role}"`)
  }
  const seen = new Set<string>()
  for (const f of files) {
    if (seen.has(f.path)) c.fail('files', `distinct paths ("${f.path}" is listed twice)`)
    seen.add(f.path)
  }
  const manifest: Manifest = {
    id: isModelId(m.id) ? m.id : c.fail('id', MODEL_ID_RULE),
    family: 'clip',
    embedding_size: c.count(m.embedding_size, 'embedding_size'),
    context_length: c.count(m.context_length, 'context_length'),
    image: parseIo(c, m.image, 'image'),
    text: parseIo(c, m.text, 'text'),
    preprocess: parsePreprocess(c, m.preprocess),
    files,
  }
  if (m.variants !== undefined) manifest.variants = parseVariants(c, m.variants)
  if (m.source !== undefined) manifest.source = c.string(m.source, 'source')
  return manifest
}

function parseVariants(c: ReturnType<typeof checker>, v: unknown): NonNullable<Manifest['variants']> {
  const out: NonNullable<Manifest['variants']> = {}
  for (const [name, value] of Object.entries(c.record(v, 'variants'))) {
    if (name !== 'int8' && name !== 'fp16') c.fail(`variants.${name}`, 'a variant named int8 or fp16')
    const entry = c.record(value, `variants.${name}`)
    const pair = {
      image_encoder: parseFile(c, entry.image_encoder, `variants.${name}.image_encoder`),
      text_encoder: parseFile(c, entry.text_encoder, `variants.${name}.text_encoder`),
    }
    for (const role of ['image_encoder', 'text_encoder'] as const) {
      if (pair[role].role !== role) c.fail(`variants.${name}.${role}.role`, `"${role}"`)
    }
    out[name as 'int8' | 'fp16'] = pair
  }
  return out
}

/** The manifest as a runner of `precision` sees it: the encoder files are the variant's (fp32: unchanged). */
export function withPrecision(manifest: Manifest, precision: Precision): Manifest {
  if (precision === 'fp32') return manifest
  const variant = manifest.variants?.[precision]
  if (!variant) {
    throw new ModError('invalid_config', `model ${manifest.id} offers no ${precision} encoders; use MOD_PRECISION=fp32 or another model`)
  }
  return {...manifest, files: manifest.files.map((f) => (f.role === 'image_encoder' || f.role === 'text_encoder' ? variant[f.role] : f))}
}

/** Reads and checks one manifest file; a missing file throws the fs error (ENOENT) for the caller to word. */
export async function readManifestFile(path: string): Promise<Manifest> {
  const text = await readFile(path, 'utf8')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    throw new ModError('invalid_config', `${path}: not valid JSON (${(e as Error).message})`)
  }
  return parseManifest(value, path)
}

/** The manifest's file with this role (image and text encoders are exactly one each, checked on parse). */
export function fileWithRole(manifest: Manifest, role: FileRole): ModelFile {
  const file = manifest.files.find((f) => f.role === role)
  if (!file) throw new ModError('invalid_config', `model '${manifest.id}' lists no ${role} file`)
  return file
}

function missing(dir: string, preset: string | undefined, what?: string, precision: Precision = 'fp32'): ModError {
  const name = `${preset ?? 'fast'}${precision === 'fp32' ? '' : ` --precision ${precision}`}`
  const subject = preset ? `model '${preset}' is not installed in ${dir}` : `no model in ${dir}`
  const detail = what ? ` (${what} is missing)` : ''
  return new ModError(
    'model_missing',
    `${subject}${detail}: run \`mod models pull ${name}\` (or set MOD_MODEL_DIR to a model folder)`,
    {dir, preset, ...(what === undefined ? {} : {file: what})},
  )
}

/** The size of the file at `path`; undefined when there is no file. */
async function fileSize(path: string): Promise<number | undefined> {
  const info = await stat(path).catch(() => undefined)
  return info?.isFile() ? info.size : undefined
}

/**
 * Loads the manifest of an installed model folder. A missing folder, manifest.json or listed file is
 * `model_missing` with one message naming the command that fixes it; a listed file of another size than the
 * manifest records is `model_unavailable` (damaged: not a missing model to do without); a malformed manifest is
 * `invalid_config`.
 */
export async function loadManifest(dir: string, preset?: string, precision: Precision = 'fp32'): Promise<Manifest> {
  const path = join(dir, MANIFEST_FILE)
  let manifest: Manifest
  try {
    manifest = withPrecision(await readManifestFile(path), precision)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') {
      throw missing(dir, preset)
    }
    throw e
  }
  for (const f of manifest.files) {
    const size = await fileSize(join(dir, f.path))
    if (size === undefined) throw missing(dir, preset, f.path, precision)
    // A file cut short (a copy or a disk that stopped) would fail in onnxruntime as a protobuf error, or load wrong.
    if (f.size !== undefined && size !== f.size) {
      const again = preset === undefined ? 'copy the whole model folder there again' : `run \`mod models pull ${preset}${precision === 'fp32' ? '' : ` --precision ${precision}`}\` again`
      throw new ModError(
        'model_unavailable',
        `${join(dir, f.path)} is ${size} bytes, not the ${f.size} its ${MANIFEST_FILE} records: the file is damaged or cut short; ${again}`,
        {dir, preset, file: f.path},
      )
    }
  }
  return manifest
}
