/**
 * Installs a model from a local copy of its file, for machines that cannot download it: the copy is checked
 * against the size and sha256 the manifest pins while it is copied into `.partial/`, synced and renamed into
 * place, and manifest.json is written last, as a pull does. Only a pinned file can be added: a copy is trusted
 * for what its hash proves, never on first use.
 */
import {createHash} from 'node:crypto'
import {createReadStream, createWriteStream, type Stats} from 'node:fs'
import {rename, rm, rmdir, stat} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import {Transform} from 'node:stream'
import {pipeline} from 'node:stream/promises'

import {ModError} from '../errors.js'
import {formatSizeExact} from '../sizes.js'
import {MANIFEST_FILE} from './manifest.js'
import {withInstallLock} from './install-lock.js'
import {localFailure, PARTIAL_DIR, syncFile, writeManifest, type PullableManifest, type PulledFile} from './pull.js'
import {makeInstallFolder} from './install-folder.js'

export interface AddOptions {
  signal?: AbortSignal
  /** Bytes copied so far of the file's size. */
  onProgress?: (copied: number, total: number) => void
}

function notPinned(message: string): ModError {
  return new ModError('invalid_config', message)
}

/**
 * Copies `source` into `destDir` as the manifest's one file and writes the installed manifest. Errors:
 * `not_found` (no such file), `invalid_config` (not a regular file, or not the pinned file: its size or sha256
 * differs; nothing of the copy is left in the folder, and an interrupted pull's part is kept).
 */
export async function addModelFile<M extends PullableManifest>(manifest: M, source: string, destDir: string, opts: AddOptions = {}): Promise<{installed: M; file: PulledFile}> {
  const file = manifest.files[0]
  if (manifest.files.length !== 1 || file.sha256 === undefined || file.size === undefined) {
    throw new ModError('invalid_config', `model ${manifest.id} cannot be added from one file: it needs ${manifest.files.length} files with a pinned size and sha256`)
  }
  let info: Stats
  try {
    info = await stat(source)
  } catch {
    throw new ModError('not_found', `${source} does not exist`)
  }
  if (!info.isFile()) throw notPinned(`${source} is not a file`)
  const expected = `the ${formatSizeExact(file.size)} ${file.path} of ${manifest.id}`
  const size = file.size
  if (info.size !== size) throw notPinned(`${source} holds ${formatSizeExact(info.size)}, not ${expected}`)

  const partial = join(destDir, PARTIAL_DIR)
  const part = join(partial, `${file.path}.add`)
  await makeInstallFolder(dirname(part))
  return withInstallLock(destDir, manifest.id, () => copyInto(manifest, source, destDir, {part, expected}, opts)).catch((e: unknown) => {
    throw localFailure(e, destDir, part, undefined, 'run the add again')
  })
}

/** addModelFile's copy of `source` into the folder, holding its install lock. */
async function copyInto<M extends PullableManifest>(manifest: M, source: string, destDir: string, to: {part: string; expected: string}, opts: AddOptions): Promise<{installed: M; file: PulledFile}> {
  const file = manifest.files[0]
  const size = file.size as number
  const {part, expected} = to
  const partial = join(destDir, PARTIAL_DIR)
  let added = false
  const hash = createHash('sha256')
  let copied = 0
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      copied += chunk.length
      // Counted as bytes arrive: a file that grows while it is copied is not taken.
      if (copied > size) return done(notPinned(`${source} grew past ${expected} while it was copied`))
      hash.update(chunk)
      opts.onProgress?.(copied, size)
      done(null, chunk)
    },
  })
  try {
    await pipeline(createReadStream(source), meter, createWriteStream(part), {signal: opts.signal})
    const sha256 = hash.digest('hex')
    if (copied !== size) throw notPinned(`${source} changed while it was copied: ${formatSizeExact(copied)}, not ${expected}`)
    if (sha256 !== file.sha256) throw notPinned(`${source} has sha256 ${sha256}, not the pinned ${file.sha256} of ${expected}`)
    await syncFile(part)
    // The folder stops counting as installed before its file changes, and counts again once manifest.json is back.
    await rm(join(destDir, MANIFEST_FILE), {force: true})
    await rename(part, join(destDir, file.path))
    const installed: M = {...manifest, files: [{...file, trust: 'pinned'}]}
    await writeManifest(destDir, installed)
    added = true
    return {installed, file: {file: file.path, size: copied, sha256, skipped: false, pinned: true}}
  } finally {
    // Installed: an interrupted pull's part is of no more use. Refused: only the copy goes, and a pull's part stays
    // for the pull to resume (the folder itself once empty).
    if (added) await rm(partial, {recursive: true, force: true})
    else await rm(part, {force: true}).then(() => rmdir(partial).catch(() => undefined))
  }
}
