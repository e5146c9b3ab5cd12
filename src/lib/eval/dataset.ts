/**
 * A labelled image folder for eval, calibrate and head train:
 *
 *   dataset/
 *     safe/            images that should get no label
 *     weapons/         one folder per label: a category of the policy, a head label, or (head train) a new one
 *     redness/         subfolders are walked too
 *     labels.csv       optional: images with several labels (or to relabel an image that sits in a folder)
 *
 * labels.csv has a header line `file,labels`, then one image per line: its path relative to the dataset
 * folder and its labels separated by ";" (empty, or `safe`, for none), e.g. `multi/a.jpg,weapons;gore`.
 * A file quoted with double quotes may hold commas; a line starting with "#" is a comment. A header `file;labels`
 * (a spreadsheet saving CSV where "," is the decimal mark) separates the fields with ";" instead: the fields after
 * the file are its labels. Empty columns after the labels (a spreadsheet's) are ignored. A listed image
 * takes exactly the labels of its line wherever it is; images right in the dataset folder (not in a
 * subfolder) are used only when listed.
 *
 * The dataset may also be a labels file alone (any name, such as the one the `mod scan --report` page
 * downloads): the same lines, each path absolute or relative to the file's own folder, and no folders; an
 * image with no label is a safe one. Its files are not filtered by extension, since scan recognises images by
 * their bytes.
 *
 * openDataset checks the layout first (unknown labels, empty folders, missing listed files) and then walks
 * the folders again lazily in items(), so a large dataset is never held in memory (labels.csv is, as text).
 */
import {lstat, opendir, readFile, realpath, stat} from 'node:fs/promises'
import {basename, dirname, extname, join, relative, resolve, sep} from 'node:path'

import {utf8Text} from '../config-file.js'
import {whyUnreadable} from '../errno.js'
import {ModError, problemsError} from '../errors.js'
import {IMAGE_EXTENSIONS} from '../image/formats.js'
import {inside, namedAs, namedBytes, readName, type FsPath} from '../input/file-names.js'
import {fileKind} from '../input/file-kind.js'
import {readFileCapped} from '../input/read-capped.js'
import {CATEGORY_NAME_PATTERN, CATEGORY_NAME_RULE} from '../names.js'
import {formatSize} from '../sizes.js'

export const SAFE_FOLDER = 'safe'
export const LABELS_FILE = 'labels.csv'
const MAX_LABELS_FILE_BYTES = 64 * 1024 * 1024

export interface DatasetItem {
  /** Path relative to the dataset folder, with "/" separators. */
  source: string
  /** The file, as the file system takes it (bytes for a name that is not UTF-8). */
  path: FsPath
  /** The file's path as messages show it. */
  shown: string
  /** The image's labels; empty for a safe image. */
  labels: string[]
}

export interface Dataset {
  /** The dataset folder, or the labels file that is the dataset. */
  root: string
  /** Every label used, sorted (without safe). */
  labels: string[]
  /** Images per label, and `safe` for images with none. */
  counts: Record<string, number>
  images: number
  /** Images right in the dataset folder that labels.csv does not list (not used). */
  unlisted: string[]
  items(): AsyncGenerator<DatasetItem>
}

export interface DatasetOptions {
  /** The labels that can be scored (policy categories and head labels); any other is an error. Unset: any name. */
  known?: ReadonlySet<string>
  /** Where `known` comes from, as an unknown label's problem says it: by default the active policy's categories. */
  knownFrom?: string
}

/** The dataset's problems, every one listed: invalid_config. */
export function invalidDataset(root: string, problems: string[]): ModError {
  return problemsError('invalid_config', `dataset ${root}`, problems, {problems})
}

const isImage = (name: string) => IMAGE_EXTENSIONS.has(extname(name).toLowerCase())
const toSource = (root: string, path: string) => relative(root, path).split(sep).join('/')

/** A file or folder of the dataset: its path as the file system takes it, and as sources and messages show it. */
interface Place {
  at: FsPath
  shown: string
}

/**
 * A folder's entries in name order, a symlink taken as what it points to (a broken one is neither file nor folder,
 * but `broken`): a dataset is often laid out with links to images kept elsewhere, and `mod scan` follows them too.
 * Names are read as bytes, as scan reads them: one that is not UTF-8 would be decoded into the name of a file that
 * does not exist.
 */
async function listEntries(dir: Place): Promise<(Place & {name: string; dir: boolean; file: boolean; broken: boolean; special: boolean})[]> {
  const entries = []
  for await (const entry of await opendir(dir.at, {encoding: 'buffer' as BufferEncoding})) {
    const {name, raw} = readName(entry.name as unknown as Buffer)
    const place = {name, at: inside(dir.at, name, raw), shown: join(dir.shown, name)}
    if (!entry.isSymbolicLink()) {
      entries.push({...place, dir: entry.isDirectory(), file: entry.isFile(), broken: false, special: !entry.isDirectory() && !entry.isFile()})
      continue
    }
    const target = await stat(place.at).catch(() => undefined)
    entries.push({
      ...place,
      dir: target?.isDirectory() ?? false,
      file: target?.isFile() ?? false,
      broken: target === undefined,
      special: target !== undefined && !target.isDirectory() && !target.isFile(),
    })
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/**
 * The images below `dir`, in name order, symlinks followed. `seen` maps each real folder walked so far in this pass
 * over the dataset (its root first) to the label folder it was walked under: a folder reached again through a link (a
 * loop, a link back to the root) is not walked again, and `clash` hears of one met again under another label folder.
 */
async function* walk(dir: Place, seen: Map<string, string>, label: string, clash?: (path: string, first: string) => void): AsyncGenerator<Place> {
  const real = namedAs(await realpath(dir.at, {encoding: 'buffer'}))
  const first = seen.get(real)
  if (first !== undefined) {
    if (first !== label && first !== ROOT_LABEL) clash?.(dir.shown, first)
    return
  }
  seen.set(real, label)
  for (const entry of await listEntries(dir)) {
    if (entry.dir) yield* walk(entry, seen, label, clash)
    // A broken link, or a FIFO, socket or device, named as an image is yielded so that reading it fails and is
    // reported, as scan reports it: left out silently, it would take an image out of the figures unseen.
    else if ((entry.file || entry.broken || entry.special) && isImage(entry.name)) yield entry
  }
}

/** What the dataset folder itself is walked under in `seen`: a link back to it is a loop, not a second label. */
const ROOT_LABEL = ''

/**
 * One CSV line's fields, with double-quoted fields ("" is a quote inside one). Spaces around a field are dropped,
 * but not those inside its quotes: a file name may start or end with a space, and is then written quoted.
 */
function splitCsvLine(line: string, separator: string): string[] {
  const fields: string[] = []
  let field = ''
  let quoted = false
  // Where the field's last quoted part ends: only what follows it is trimmed at the end.
  let quotedEnd = -1
  const end = () => {
    fields.push(quotedEnd < 0 ? field.trim() : field.slice(0, quotedEnd) + field.slice(quotedEnd).trimEnd())
    field = ''
    quotedEnd = -1
  }
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') {
        quoted = false
        quotedEnd = field.length
      } else field += c
    } else if (c === '"') {
      if (quotedEnd < 0) field = field.trimStart()
      quoted = true
    } else if (c === separator) end()
    else field += c
  }
  end()
  return fields
}

/**
 * The header line, `file,labels` or `file;labels` (or as a person heads the columns: `filename`, `path` or `image`,
 * then `label`), each name optionally quoted, and empty columns after them (a spreadsheet saves those when a cell
 * further right was ever used): its separator, or undefined for another line.
 */
function headerSeparator(line: string): string | undefined {
  return /^\s*"?(?:file|file ?name|path|image)"?\s*([,;])\s*"?labels?"?\s*(?:\1\s*)*$/i.exec(line)?.[1]
}

/** A labels file's text → source → labels; every problem is reported at once, each with `name:line`. */
export function parseLabelsCsv(text: string, problems: string[], name = LABELS_FILE): Map<string, string[]> {
  const listed = new Map<string, string[]>()
  // Line ends of Windows, Unix and the classic Mac OS (a Mac Excel's "CSV (Macintosh)": CR alone).
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/)
  let header = true
  let separator = ','
  lines.forEach((line, i) => {
    if (line.trim() === '' || line.startsWith('#')) return
    // The header may follow comments: it is the first line that is neither.
    const first = header
    header = false
    const headed = first ? headerSeparator(line) : undefined
    if (headed !== undefined) {
      separator = headed
      return
    }
    const at = `${name}:${i + 1}`
    const split = splitCsvLine(line, separator)
    // With ";" between the fields, the fields after the file are its labels, quoted together or not.
    const fields = separator === ';' ? [split[0], split.slice(1).join(';')] : split
    // Empty columns after the labels are a spreadsheet's, as in the header; a third value is not.
    while (fields.length > 2 && fields.at(-1) === '') fields.pop()
    if (fields.length > 2 || fields[0] === '') {
      problems.push(`${at}: expected "file${separator}labels" (labels separated by ";"), got ${JSON.stringify(line)}`)
      return
    }
    const source = fields[0].replace(/^\.\//, '')
    const written = (fields[1] ?? '').split(';').map((l) => l.trim())
    const labels = [...new Set(written.filter((l) => l !== '' && l !== SAFE_FOLDER))]
    // `safe` says the image has no label: beside a label it contradicts it, and either reading skews the figures.
    if (written.includes(SAFE_FOLDER) && labels.length > 0) {
      problems.push(`${at}: ${source} is marked both safe and ${labels.join(';')}: safe means no label, so write one or the other`)
    }
    if (listed.has(source)) problems.push(`${at}: ${source} is listed twice`)
    listed.set(source, labels)
  })
  return listed
}

async function readLabelsCsv(path: string, problems: string[]): Promise<Map<string, string[]>> {
  const name = basename(path)
  const info = await stat(path).catch((e: unknown) => e as NodeJS.ErrnoException)
  if (info instanceof Error) {
    if (info.code !== 'ENOENT') problems.push(`cannot read ${name}: ${whyUnreadable(info)}`)
    return new Map()
  }
  // Refused before it is opened: a FIFO's reading would wait for a writer that a dataset never has.
  if (!info.isFile()) {
    problems.push(`${name} is ${info.isDirectory() ? 'a folder' : fileKind(info)}: the labels are read from a regular file`)
    return new Map()
  }
  if (info.size > MAX_LABELS_FILE_BYTES) {
    problems.push(`${name} is larger than ${formatSize(MAX_LABELS_FILE_BYTES)}`)
    return new Map()
  }
  let text
  try {
    // Strictly UTF-8: a spreadsheet's "Unicode text" (UTF-16) or its Windows encoding would turn every file name
    // into one that does not exist, each line reported as a missing file.
    text = utf8Text(await readFile(path), name, 'labels file')
  } catch (e) {
    problems.push(e instanceof ModError ? e.message : `cannot read ${name}: ${whyUnreadable(e)}`)
    return new Map()
  }
  return parseLabelsCsv(text, problems, name)
}

/** Reads an image file of the dataset, refusing it by its size before reading it (and as bytes arrive). */
export async function readDatasetFile(file: Pick<DatasetItem, 'path' | 'shown'>, maxBytes: number): Promise<Buffer> {
  try {
    // Refused before it is opened: a FIFO's reading would wait for a writer that a dataset never has.
    const info = await stat(file.path).catch(() => undefined)
    if (info !== undefined && !info.isFile()) throw new ModError('unsupported_media', `${file.shown} is ${fileKind(info)}, not a regular file`)
    return await readFileCapped(file.path, maxBytes, () => new ModError('payload_too_large', `${file.shown} is larger than the ${maxBytes}-byte limit (MOD_MAX_BYTES)`))
  } catch (e) {
    if (e instanceof ModError) throw e
    const broken = (e as NodeJS.ErrnoException).code === 'ENOENT' && (await lstat(file.path).catch(() => undefined))?.isSymbolicLink()
    throw new ModError('unreadable_image', `cannot read ${file.shown}: ${broken ? 'a broken symbolic link (its target does not exist)' : whyUnreadable(e)}`)
  }
}

/** The labels used, sorted, with a problem for each badly named or (given `known`) unknown one. */
function checkLabels(counts: Record<string, number>, options: DatasetOptions, problems: string[]): string[] {
  const labels = Object.keys(counts).filter((l) => l !== SAFE_FOLDER).sort()
  for (const l of labels) {
    if (!CATEGORY_NAME_PATTERN.test(l)) problems.push(`label "${l}" ${CATEGORY_NAME_RULE}`)
  }
  // `Safe/` beside `safe/`, `Weapons` beside `weapons`: one label written two ways, which would count as two.
  const byCase = new Map<string, string[]>()
  for (const l of [SAFE_FOLDER, ...labels]) byCase.set(l.toLowerCase(), [...(byCase.get(l.toLowerCase()) ?? []), l])
  for (const names of byCase.values()) {
    if (names.length > 1) problems.push(`labels ${names.map((n) => `"${n}"`).join(' and ')} differ only in case: write one label one way (rename the folder or the labels)`)
  }
  if (options.known) {
    const unknown = labels.filter((l) => CATEGORY_NAME_PATTERN.test(l) && !options.known?.has(l))
    if (unknown.length > 0) {
      problems.push(
        `unknown label${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}: not ${options.knownFrom ?? 'a category of the active policy'} (known: ${[...options.known].join(', ')})`,
      )
    }
  }
  return labels
}

/**
 * A labels file's path as the file it names: as written (a file name may hold a backslash on Linux), else with each
 * `\xNN` read as the byte it shows (a name that is not UTF-8, as scan and the report page write it), else with each
 * backslash read as a separator, as in a file written on Windows. Undefined when none is a file.
 */
async function listedFile(folder: string, source: string): Promise<FsPath | undefined> {
  const path = resolve(folder, source)
  const candidates: FsPath[] = [path]
  if (/\\x[0-9a-f]{2}/.test(path)) candidates.push(namedBytes(path))
  if (source.includes('\\')) candidates.push(resolve(folder, source.replace(/\\/g, '/')))
  for (const candidate of candidates) {
    if ((await stat(candidate).catch(() => undefined))?.isFile()) return candidate
  }
  return undefined
}

/** The labels.csv line of an image walked as `source` ("/"-separated): as written, or written on Windows (backslashes). */
function listedAs(listed: ReadonlyMap<string, string[]>, source: string): string | undefined {
  if (listed.has(source)) return source
  const windows = source.replace(/\//g, '\\')
  return listed.has(windows) ? windows : undefined
}

/**
 * A labels file alone as the dataset: every line an image, its path absolute or relative to the file's folder.
 * Safe images are the lines with no label; a dataset of safe images alone still measures what is flagged.
 */
async function openLabelsFile(file: string, options: DatasetOptions): Promise<Dataset> {
  const problems: string[] = []
  const name = basename(file)
  const listed = await readLabelsCsv(file, problems)
  const counts: Record<string, number> = {[SAFE_FOLDER]: 0}
  const paths = new Map<string, FsPath>()
  for (const [source, labels] of listed) {
    const path = await listedFile(dirname(file), source)
    if (path === undefined) {
      problems.push(`${name} lists ${source}, which is not a file`)
      continue
    }
    paths.set(source, path)
    if (labels.length === 0) counts[SAFE_FOLDER]++
    for (const l of labels) counts[l] = (counts[l] ?? 0) + 1
  }
  const labels = checkLabels(counts, options, problems)
  if (listed.size === 0 && problems.length === 0) problems.push(`${name} lists no images: one line per image, "file,labels"`)
  if (problems.length > 0) throw invalidDataset(file, problems)
  return {
    root: file,
    labels,
    counts,
    images: listed.size,
    unlisted: [],
    async *items() {
      for (const [source, labels] of listed) {
        const path = paths.get(source) as FsPath
        yield {source, path, shown: typeof path === 'string' ? path : namedAs(path), labels}
      }
    },
  }
}

/** Checks the dataset's layout and counts its images; items() then walks it lazily. */
export async function openDataset(root: string, options: DatasetOptions = {}): Promise<Dataset> {
  const info = await stat(root).catch(() => undefined)
  if (info?.isFile()) return openLabelsFile(root, options)
  if (!info?.isDirectory()) throw new ModError('invalid_config', `dataset ${root}: not a folder or a labels file`)
  const problems: string[] = []
  const listed = await readLabelsCsv(join(root, LABELS_FILE), problems)

  const entries = await listEntries({at: root, shown: root})
  const realRoot = namedAs(await realpath(root, {encoding: 'buffer'}))
  const counted = new Map([[realRoot, ROOT_LABEL]])
  // A folder linked under two labels would count under the first alone, skewing eval and calibrate unseen.
  const clash = (path: string, first: string) =>
    problems.push(`${toSource(root, path)}/ is the folder already under ${first}/ (a link): its images would count under ${first} alone: keep one link, and give the images both labels in ${LABELS_FILE}`)
  const folders = entries.filter((e) => e.dir && !e.name.startsWith('.'))
  const rootImages = entries.filter((e) => e.file && isImage(e.name))

  const counts: Record<string, number> = {[SAFE_FOLDER]: 0}
  const count = (labels: string[]) => {
    if (labels.length === 0) counts[SAFE_FOLDER]++
    for (const l of labels) counts[l] = (counts[l] ?? 0) + 1
  }
  const found = new Set<string>()
  let images = 0
  for (const {name: folder, ...place} of folders) {
    if (folder !== SAFE_FOLDER && !CATEGORY_NAME_PATTERN.test(folder)) {
      problems.push(`${folder}/: a label folder's name ${CATEGORY_NAME_RULE}`)
      continue
    }
    let inFolder = 0
    for await (const image of walk(place, counted, folder, clash)) {
      const source = toSource(root, image.shown)
      inFolder++
      images++
      const line = listedAs(listed, source)
      const labels = line === undefined ? undefined : listed.get(line)
      if (line !== undefined) found.add(line)
      count(labels ?? (folder === SAFE_FOLDER ? [] : [folder]))
    }
    if (inFolder === 0) problems.push(`${folder}/ holds no images (${[...IMAGE_EXTENSIONS].join(' ')})`)
  }
  const unlisted: string[] = []
  for (const {name} of rootImages) {
    const labels = listed.get(name)
    if (labels === undefined) {
      unlisted.push(name)
      continue
    }
    found.add(name)
    images++
    count(labels)
  }
  for (const source of listed.keys()) {
    if (!found.has(source)) problems.push(`${LABELS_FILE} lists ${source}, which is not an image in the dataset folder`)
  }
  if (!folders.some((f) => f.name === SAFE_FOLDER)) problems.push(`no ${SAFE_FOLDER}/ folder: the images that should get no label are needed`)

  const labels = checkLabels(counts, options, problems)
  if (labels.length === 0 && problems.length === 0) problems.push('no label folder: add one folder per label beside safe/')
  if (problems.length > 0) throw invalidDataset(root, problems)

  return {
    root,
    labels,
    counts,
    images,
    unlisted,
    async *items() {
      const walked = new Map([[realRoot, ROOT_LABEL]])
      for (const {name: folder, ...place} of folders) {
        for await (const image of walk(place, walked, folder)) {
          const source = toSource(root, image.shown)
          const line = listedAs(listed, source)
          yield {source, path: image.at, shown: image.shown, labels: (line === undefined ? undefined : listed.get(line)) ?? (folder === SAFE_FOLDER ? [] : [folder])}
        }
      }
      for (const {name, at, shown} of rootImages) {
        const labels = listed.get(name)
        if (labels) yield {source: name, path: at, shown, labels}
      }
    },
  }
}
