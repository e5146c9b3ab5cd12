import type {Stats} from 'node:fs'
import {lstat, opendir, readlink, realpath, stat} from 'node:fs/promises'
import {basename, dirname, isAbsolute, join, relative, resolve, sep} from 'node:path'

import ignore, {type Ignore} from 'ignore'

import type {ImageInput} from '../lib/engine.js'
import {whyUnreadable} from '../lib/errno.js'
import {isModError, ModError, type ErrorCode} from '../lib/errors.js'
import {isAnimatedPng} from '../lib/image/apng.js'
import {refusedImageFormat} from '../lib/image/decode.js'
import {inside, namedAs, readName, type FsPath} from '../lib/input/file-names.js'
import {fileKind} from '../lib/input/file-kind.js'
import {readCapped, readFileCapped} from '../lib/input/read-capped.js'
import {aFormat, imageFormat, isLfsPointer, isVideoHead, readHead, sniffImage, stillImageFormat} from '../lib/input/sniff.js'
import {plural} from '../lib/plural.js'
import {formatSize} from '../lib/sizes.js'
import {VIDEO_FORMATS} from '../lib/video/ffmpeg-input.js'
import {repositoryRoot, trackedFiles, type Tracked} from './repository.js'
import {shellPath} from './shell-path.js'

/** Why a file met in a folder was not scanned; counted for the summary line. */
export type SkipReason = 'not images' | 'not regular files' | 'symlink loop' | 'broken symlink' | 'excluded'

/** A folder's own exclusions, in git-ignore syntax, for the folder and everything below it. */
export const IGNORE_FILE = '.modignore'
const MAX_IGNORE_BYTES = 1024 * 1024
/** The version-control ignore files, read as ripgrep reads them: `.gitignore` inside a git repository, `.ignore` anywhere. */
const GIT_IGNORE = '.gitignore'
const PLAIN_IGNORE = '.ignore'
const VCS_IN_REPO: IgnoreFiles = {vcs: true, inRepo: true}

/**
 * Exclusion rules in force in a part of a walk, outermost first: each set of patterns matches paths relative to
 * its own folder. `flag` marks the --exclude patterns, `vcs` those of the version-control ignore files, `git` those
 * of them that are git's (`.gitignore`, `.git/info/exclude`), which apply in their own repository only.
 */
type Rules = readonly {base: string; ig: Ignore; flag?: boolean; vcs?: boolean; git?: boolean}[]

/**
 * A set of git-ignore patterns matched as git (on Linux) and ripgrep match them: case-sensitively, so that a
 * `.gitignore` or an `--exclude '*.PNG'` leaves out `a.PNG`, never `a.png` (the ignore package folds case by default).
 */
function patternSet(): Ignore {
  return ignore({ignorecase: false})
}

/** true: excluded, false: re-included by a `!pattern`, undefined: the rules do not say. */
function verdict({base, ig}: Rules[number], path: string, isDir: boolean): boolean | undefined {
  const rel = relative(base, path)
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined
  const t = ig.test(`${rel.split(sep).join('/')}${isDir ? '/' : ''}`)
  return t.ignored ? true : t.unignored ? false : undefined
}

/**
 * As git reads .gitignore files: the deepest .modignore that says something about a path decides, so a
 * `!pattern` in a subfolder re-includes what a parent folder's file left out. --exclude, asked for on this run,
 * excludes whatever the files say.
 */
function excluded(all: Rules, path: string, isDir: boolean, tracked?: Tracked): boolean {
  // A file git tracks (or a folder holding one) is in the repository whatever its ignore files say, as in git.
  const rules = tracked?.(path, isDir) ? all.filter((r) => !r.vcs) : all
  if (rules.some((r) => r.flag && verdict(r, path, isDir) === true)) return true
  for (let i = rules.length - 1; i >= 0; i--) {
    const v = rules[i].flag ? undefined : verdict(rules[i], path, isDir)
    if (v !== undefined) return v
  }
  return false
}

/** How a walk reads ignore files: mod's own always, the version-control ones unless --no-ignore. */
interface IgnoreFiles {
  vcs: boolean
  /** Inside a git repository, where `.gitignore` files apply. */
  inRepo: boolean
}

/** The ignore files a folder's rules come from, in rising precedence: a later file's pattern overrides an earlier's. */
function ignoreFileNames(files: IgnoreFiles): string[] {
  return [...(files.vcs ? [...(files.inRepo ? [GIT_IGNORE] : []), PLAIN_IGNORE] : []), IGNORE_FILE]
}

/**
 * An ignore file's text. With `passOverBroken` (the version-control files), a symlink to nothing (a moved shared
 * file, a checkout missing its target) has no rules, as git and ripgrep pass over it with a warning: the walk counts
 * it among the broken symlinks, which the summary line names. Any other failure to read one stops the run.
 */
async function readIgnoreFile(path: string, at: FsPath = path, passOverBroken = false): Promise<string> {
  try {
    return (await readFileCapped(at, MAX_IGNORE_BYTES)).toString('utf8')
  } catch (e) {
    const broken = errnoOf(e) === 'ENOENT' ? await brokenLink(path, at) : undefined
    if (broken && passOverBroken) return ''
    throw new ModError('invalid_config', broken ? broken.message : `cannot read ${path}: ${e instanceof ModError ? e.message : whyUnreadable(e)}`)
  }
}

/** The folder's ignore files (those of `present`) added to the rules, a set of patterns each; `at` as in Folder. */
async function withIgnoreFiles(rules: Rules, dir: string, files: IgnoreFiles, present: (name: string) => boolean, at: FsPath = dir): Promise<Rules> {
  const names = ignoreFileNames(files).filter(present)
  const read = async (name: string): Promise<Rules> => {
    if (!names.includes(name)) return []
    const ig = patternSet().add(await readIgnoreFile(join(dir, name), inside(at, name), name !== IGNORE_FILE))
    return [{base: dir, ig, ...(name === IGNORE_FILE ? {} : {vcs: true}), ...(name === GIT_IGNORE ? {git: true} : {})}]
  }
  // Each file's patterns apart, later ones deciding first (excluded): only the version-control files' spare a
  // tracked file, and only git's stop at a nested repository's top (walk).
  return [...rules, ...(await read(GIT_IGNORE)), ...(await read(PLAIN_IGNORE)), ...(await read(IGNORE_FILE))]
}

/**
 * The rules a folder given on the command line inherits, as ripgrep applies them: inside a git repository, the
 * repository's `.git/info/exclude` and the `.gitignore` and `.ignore` files of each folder from the repository's
 * top down to the given folder's parent (a `.modignore` applies from its own folder only). None when they exclude
 * the given folder itself: a folder named on the command line is walked.
 */
async function inheritedRules(dir: string, root: string): Promise<Rules> {
  const above: string[] = []
  for (let d = resolve(dir); d !== root && dirname(d) !== d; ) {
    d = dirname(d)
    above.unshift(d)
  }
  const exists = (path: string) => lstat(path).then((info) => info.isFile(), () => false)
  let rules: Rules = []
  const exclude = join(root, '.git', 'info', 'exclude')
  if (await exists(exclude)) rules = [{base: root, ig: patternSet().add(await readIgnoreFile(exclude)), vcs: true, git: true}]
  for (const d of above) {
    const present = new Set<string>()
    for (const name of [GIT_IGNORE, PLAIN_IGNORE]) if (await exists(join(d, name))) present.add(name)
    rules = await withIgnoreFiles(rules, d, VCS_IN_REPO, (name) => present.has(name))
  }
  return excluded(rules, resolve(dir), true) ? [] : rules
}

export type Skipped = Map<SkipReason, number>

/** Each reason for one file, where it differs from the count's form. */
const ONE: Partial<Record<SkipReason, string>> = {
  'not images': 'not an image',
  'not regular files': 'not a regular file',
}
/** Each reason for several files, where it differs from the reason's name. */
const MANY: Partial<Record<SkipReason, string>> = {
  'symlink loop': 'symlink loops',
  'broken symlink': 'broken symlinks',
}

/** An image for the engine, or an input that failed before it could be read (reported in its place). */
export type ScanItem = {input: ImageInput} | {entry: ScanEntry}

/** An input reported in place of a result; on the command line also `not_found` (a path that does not exist). */
export interface ScanEntry {
  source: string
  error: {code: ErrorCode; message: string}
}

function entry(source: string, code: ErrorCode, message: string): ScanItem {
  return {entry: {source, error: {code, message}}}
}

function errnoOf(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? 'error'
}

/** A path given as a URL: the CLI reads files, and says so rather than only "does not exist". */
const URL_LIKE = /^https?:\/\//i
const NOT_URLS = ' (paths are files and folders, not URLs: download the image first, or have a mod serve fetch it, POST /v1/moderate/json)'

function readError(path: string, e: unknown): ModError {
  if (e instanceof ModError) return e
  const code = errnoOf(e)
  if (code === 'ENOENT') return new ModError('not_found', `${path} does not exist${URL_LIKE.test(path) ? NOT_URLS : ''}`)
  return new ModError('unreadable_image', `cannot read ${path}: ${whyUnreadable(e)}`)
}

/** not_found naming the missing target when `path` is a symbolic link to nothing: the path itself is there. */
async function brokenLink(path: string, at: FsPath = path): Promise<ModError | undefined> {
  const target = await readlink(at, {encoding: 'buffer'}).catch(() => undefined)
  return target && new ModError('not_found', `${path} is a symbolic link to ${namedAs(target)}, which does not exist`)
}

/** Reads a file with the byte cap counted as bytes arrive, whatever its size claims; `at` where a raw name needs bytes. */
async function readFile(path: string, maxBytes: number, at: FsPath = path): Promise<Buffer> {
  try {
    return await readFileCapped(at, maxBytes, () => new ModError('payload_too_large', `${path} is larger than ${formatSize(maxBytes)}`))
  } catch (e) {
    // Read inside the engine, where only an input's own errors become an entry in its place: a file removed
    // since it was listed is unreadable there, not a path the user got wrong.
    if (errnoOf(e) === 'ENOENT') throw new ModError('unreadable_image', `cannot read ${path}: it was removed after it was listed`)
    throw readError(path, e)
  }
}

function skip(skipped: Skipped, reason: SkipReason): void {
  skipped.set(reason, (skipped.get(reason) ?? 0) + 1)
}

/**
 * What one folder entry turned out to be, once its symlink is followed and its first bytes are read; an image's
 * `real` path is known for a symlink (otherwise it is its folder's real path and its name).
 */
type Checked = {dir: Folder} | {image: string; at: FsPath; real?: string} | {skip: SkipReason} | {item: ScanItem}

/**
 * A folder as results and messages show it (`shown`, see namedAs), and as the file system takes it (`at`): bytes
 * once its own name or a folder's above it is not UTF-8, whose shown name would not exist.
 */
interface Folder {
  shown: string
  at: FsPath
}

/** The real path of a file or folder as a key, each name shown as namedAs shows it (two names never share one). */
function realOf(at: FsPath, shown: string): Promise<string> {
  return realpath(at, {encoding: 'buffer'}).then(namedAs, () => shown)
}

/** A folder entry: its name as shown (see namedAs), and its bytes where they are not UTF-8. */
interface DirEntry {
  name: string
  raw?: Buffer
  symlink: boolean
  dir: boolean
  file: boolean
}

/** Entries of one folder checked at once: each check waits for libuv threads that image decodes also use. */
const CHECKS_AT_ONCE = 32

/**
 * Folders nested deeper than this below a folder given are not walked (an error entry says so): each level is one
 * more generator on the stack, and some 1 700 levels (an unpacked archive made to do it) overflowed it, ending the
 * whole run with nothing reported.
 */
export const MAX_FOLDER_DEPTH = 256

/** A video given to a command that scores images: an error entry that names the command for it. */
function videoEntry(p: string): ScanItem {
  return entry(p, 'unsupported_media', `${p} is a video: use mod scan-video ${shellPath(p)}`)
}

/** An error entry, never a file skipped as not an image: a gate would pass the image the pointer stands for unseen. */
function lfsPointerEntry(p: string): ScanItem {
  return entry(p, 'unsupported_media', `${p} is a Git LFS pointer, not the file it stands for: fetch the LFS files before scanning (git lfs pull; actions/checkout with lfs: true)`)
}

/** `videos`: a video is an error entry (videoEntry), not a file skipped as not an image. */
async function check(dir: Folder, n: DirEntry, videos = false): Promise<Checked> {
  const p = join(dir.shown, n.name)
  // The file system takes the name's own bytes; a message and the results show it escaped.
  const at = inside(dir.at, n.name, n.raw)
  let isDir = n.dir
  let isFile = n.file
  if (n.symlink) {
    let info: Stats
    try {
      info = await stat(at)
    } catch (e) {
      return {skip: errnoOf(e) === 'ELOOP' ? 'symlink loop' : 'broken symlink'}
    }
    isDir = info.isDirectory()
    isFile = info.isFile()
  }
  if (isDir) return {dir: {shown: p, at}}
  if (!isFile) return {skip: 'not regular files'}
  let first
  try {
    first = await readHead(at)
  } catch (e) {
    const err = readError(p, e)
    return {item: entry(p, err.code, err.message)}
  }
  // A HEIF/HEIC photo is an image mod cannot decode, and a video one that `mod scan` does not: error entries (the
  // decoder names the format), never skips that a gate reading the exit code would pass unchecked.
  if (sniffImage(first) !== 'other') return {image: p, at, ...(n.symlink ? {real: await realOf(at, p)} : {})}
  if (videos && isVideoHead(first)) return {item: videoEntry(p)}
  if (isLfsPointer(first)) return {item: lfsPointerEntry(p)}
  return {skip: 'not images'}
}

/** The git repository a walk is in: what git tracks there. */
interface Repository {
  root: string
  tracked: Tracked
}

/** What every folder of one run's walks shares. */
interface WalkContext {
  maxBytes: number
  skipped: Skipped
  reached: Set<string>
  vcs: boolean
  videos: boolean
  gitUnknown?: (root: string, why: string) => void
}

/**
 * The repository at `root`. Where git cannot say what it tracks, every file counts as tracked: the `.gitignore` and
 * `.ignore` files, which a change under review can add, then hide none of them (`.modignore` and --exclude still
 * apply), rather than a committed image; `gitUnknown` hears why.
 */
async function repositoryAt(root: string, ctx: WalkContext): Promise<Repository> {
  const files = await trackedFiles(root)
  if ('tracked' in files) return {root, tracked: files.tracked}
  ctx.gitUnknown?.(root, files.unknown)
  return {root, tracked: () => true}
}

/**
 * A folder, recursively in name order. Files are picked by content (their first bytes), not by extension;
 * symlinks are followed, to files and to folders, but one to a folder the walk is inside (`above`, real paths) is a
 * loop; a folder reached before by another way is walked once, as a file is scanned once, and is no loop.
 * A folder that cannot be read is an error entry and the walk goes on. `real` is the folder's real path: with a
 * file's name it says whether the run has reached that file already.
 */
async function* walk(folder: Folder, real: string, ctx: WalkContext, above: Set<string>, inherited: Rules, repo: Repository | undefined, depth = 0): AsyncGenerator<ScanItem> {
  const {maxBytes, skipped} = ctx
  const dir = folder.shown
  let names: DirEntry[]
  try {
    names = []
    // Names as bytes: one that is not UTF-8 would otherwise be decoded into a name that does not exist.
    for await (const e of await opendir(folder.at, {encoding: 'buffer' as BufferEncoding})) {
      names.push({...readName(e.name as unknown as Buffer), symlink: e.isSymbolicLink(), dir: e.isDirectory(), file: e.isFile()})
    }
  } catch (e) {
    yield entry(dir, 'unreadable_image', `cannot read the folder ${dir}: ${whyUnreadable(e)}`)
    return
  }
  // A folder holding `.git` is a repository's top (the first, or one nested in it: a submodule).
  const top = resolve(dir)
  const here = ctx.vcs && top !== repo?.root && names.some((n) => n.name === '.git') ? await repositoryAt(top, ctx) : repo
  const files: IgnoreFiles = {vcs: ctx.vcs, inRepo: here !== undefined}
  // As git and ripgrep do, a nested repository (a submodule, a clone inside a clone) is not ruled by the git ignore
  // files of the one around it: its untracked files are its own.
  const kept = here !== repo ? inherited.filter((r) => !r.git) : inherited
  // A folder that bears an ignore file's name (a `.ignore/` of images) is walked as any folder, not read as rules.
  const rules = await withIgnoreFiles(kept, dir, files, (name) => names.some((n) => n.name === name && !n.dir), folder.at)
  names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const wanted = names.filter((n) => {
    if (n.name === IGNORE_FILE && !n.dir) return false
    // A symlink is judged as a file here; a link to a folder is judged as a folder when it is walked.
    if (!(ctx.vcs && n.name === '.git') && !excluded(rules, join(dir, n.name), n.dir, here?.tracked)) return true
    skip(skipped, 'excluded')
    return false
  })
  for (let i = 0; i < wanted.length; i += CHECKS_AT_ONCE) {
    const checked = await Promise.all(wanted.slice(i, i + CHECKS_AT_ONCE).map((n) => check(folder, n, ctx.videos)))
    for (const c of checked) {
      if ('skip' in c) skip(skipped, c.skip)
      else if ('item' in c) yield c.item
      else if ('image' in c) {
        const {image: p, at} = c
        if (firstReach(ctx.reached, c.real ?? join(real, basename(p)))) yield {input: {source: p, read: () => readFile(p, maxBytes, at)}}
      } else {
        if (excluded(rules, c.dir.shown, true, here?.tracked)) {
          skip(skipped, 'excluded')
          continue
        }
        const realDir = await realOf(c.dir.at, c.dir.shown)
        if (above.has(realDir)) {
          skip(skipped, 'symlink loop')
          continue
        }
        if (depth + 1 > MAX_FOLDER_DEPTH) {
          yield entry(c.dir.shown, 'unreadable_image', `the folder ${c.dir.shown} is nested more than ${MAX_FOLDER_DEPTH} folders deep: not walked`)
          continue
        }
        if (!firstReach(ctx.reached, realDir)) continue
        above.add(realDir)
        yield* walk(c.dir, realDir, ctx, above, rules, here, depth + 1)
        above.delete(realDir)
      }
    }
  }
}

/** true the first time a run reaches a file or a folder (by its real path), false after. */
export function firstReach(reached: Set<string>, real: string): boolean {
  if (reached.has(real)) return false
  reached.add(real)
  return true
}

/** How scanInputs picks files. */
export interface InputOptions {
  /** Git-ignore patterns (`*.tmp`, `drafts/`) that leave paths out (--exclude). */
  exclude?: readonly string[]
  /** The paths come from a file list (e.g. a diff's changed files). */
  listed?: boolean
  /** Skip `.git` folders and what `.gitignore` (inside a git repository) and `.ignore` files exclude, as ripgrep does. */
  vcsIgnore?: boolean
  /** The real paths reached so far: shared by the calls of one run, so that a file reached twice is scanned once. */
  reached?: Set<string>
  /**
   * A video met in a folder or a list is an error entry pointing at `mod scan-video` (for `mod scan`, whose exit code
   * a gate reads), not a file skipped as not an image.
   */
  videos?: boolean
  /**
   * Told of each repository (by its top folder) whose tracked files git cannot list, with git's reason: its
   * `.gitignore` and `.ignore` files are then not applied (see repositoryAt).
   */
  gitUnknown?: (root: string, why: string) => void
}

/**
 * What is wrong with the path `-` (one image read from stdin) among `paths`, if anything: stdin holds one image, so
 * `-` given twice is a mistake; and nobody types an image, so `-` with stdin a terminal is a slip (a file name left
 * out) that would wait for input forever.
 */
export function stdinPathProblem(command: string, paths: readonly string[], stdin: {isTTY?: boolean}): string | undefined {
  const dashes = paths.filter((p) => p === '-').length
  if (dashes > 1) return 'the path - (stdin) is given twice: stdin holds one image'
  if (dashes === 1 && stdin.isTTY) return `the path - reads one image from stdin, and stdin is a terminal: pipe the image in (mod ${command} - < photo.jpg)`
  return undefined
}

/**
 * Files, folders and `-` (stdin), lazily: nothing is read before the engine asks. A file named on the command line
 * is always tried, whatever its name, unless an `exclude` pattern matches it; one that does not exist, or is a
 * device or a socket, is an error entry in its place; a named pipe is read whole, as stdin is. `exclude` holds
 * git-ignore patterns (`*.tmp`, `drafts/`), matched below each folder given and against each file given (relative
 * to the working folder); a `.modignore` file in a folder adds its own patterns for that folder and below. With
 * `vcsIgnore`, a walk also leaves out `.git` folders and what `.ignore` files and, inside a git repository,
 * `.gitignore` files and `.git/info/exclude` exclude (those of the folders above a folder given, up to the
 * repository's top, included); in one folder `.modignore` overrides `.ignore`, which overrides `.gitignore`. A file
 * reached twice (a folder given twice, a file given inside a folder given) is scanned once. With `listed` (paths
 * from a file list), a file is judged by its first bytes as in a folder: one that is not an image is skipped and
 * counted, one that does not exist is still an error entry.
 */
export async function* scanInputs(
  paths: readonly FsPath[],
  maxBytes: number,
  skipped: Skipped,
  stdin: NodeJS.ReadableStream = process.stdin,
  {exclude = [], listed = false, vcsIgnore = false, reached = new Set<string>(), videos = false, gitUnknown}: InputOptions = {},
): AsyncGenerator<ScanItem> {
  const patterns = exclude.length > 0 ? patternSet().add([...exclude]) : undefined
  const ctx: WalkContext = {maxBytes, skipped, reached, vcs: vcsIgnore, videos, gitUnknown}
  for (const p of paths) {
    if (typeof p !== 'string') {
      if (firstReach(reached, resolve(namedAs(p)))) yield* rawNamedFile(p, maxBytes, skipped, listed, videos)
      continue
    }
    if (p === '-') {
      yield {input: {source: '-', read: () => readCapped(stdin as AsyncIterable<Buffer>, maxBytes, 'stdin')}}
      continue
    }
    let info: Stats
    try {
      info = await stat(p)
    } catch (e) {
      const err = (errnoOf(e) === 'ENOENT' && (await brokenLink(p))) || readError(p, e)
      yield entry(p, err.code, err.message)
      continue
    }
    const real = await realpath(p).catch(() => resolve(p))
    if (info.isDirectory()) {
      if (!firstReach(reached, real)) continue
      const root = vcsIgnore ? await repositoryRoot(p) : undefined
      const outer = root === undefined ? [] : await inheritedRules(p, root)
      const repo = root === undefined ? undefined : await repositoryAt(root, ctx)
      yield* walk({shown: p, at: p}, real, ctx, new Set([real]), [...outer, ...(patterns ? [{base: p, ig: patterns, flag: true}] : [])], repo)
    } else if (info.isFile()) {
      if (patterns && patterns.ignores(givenName(p))) skip(skipped, 'excluded')
      else if (!firstReach(reached, real)) continue
      else if (listed) {
        const checked = await check({shown: dirname(p), at: dirname(p)}, {name: basename(p), symlink: false, dir: false, file: true}, videos)
        if ('skip' in checked) skip(skipped, checked.skip)
        else if ('item' in checked) yield checked.item
        else yield {input: {source: p, read: () => readFile(p, maxBytes, 'at' in checked ? checked.at : p)}}
      } else {
        const head = await readHead(p).catch(() => Buffer.alloc(0))
        if (isVideoHead(head)) yield videoEntry(p)
        // The hook names files: a checkout without its LFS files gets the hint a folder or a list would.
        else if (isLfsPointer(head)) yield lfsPointerEntry(p)
        else yield {input: {source: p, read: () => readFile(p, maxBytes)}}
      }
    } else if (info.isFIFO()) {
      // A named pipe (`<(curl …)`, /dev/stdin piped) is read whole as `-` is, once: its first bytes are not looked
      // at before, as they could not be read again. A walk leaves pipes out; only a name given here is read.
      if (patterns && patterns.ignores(givenName(p))) skip(skipped, 'excluded')
      else if (firstReach(reached, real)) yield {input: {source: p, read: () => readFile(p, maxBytes)}}
    } else {
      yield entry(p, 'unsupported_media', `${p} is ${fileKind(info)}, not a regular file: give a file, a named pipe, a folder or - for stdin`)
    }
  }
}

/**
 * A path whose bytes are not UTF-8 (from a file list, or the command line's bytes): a file is scanned as a listed
 * or named file is, under its escaped name; anything else is an entry in its place.
 */
async function* rawNamedFile(at: Buffer, maxBytes: number, skipped: Skipped, listed: boolean, videos: boolean): AsyncGenerator<ScanItem> {
  const shown = namedAs(at)
  let info: Stats
  try {
    info = await stat(at)
  } catch (e) {
    const err = (errnoOf(e) === 'ENOENT' && (await brokenLink(shown, at))) || readError(shown, e)
    yield entry(shown, err.code, err.message)
    return
  }
  if (!info.isFile()) {
    yield entry(shown, 'unsupported_media', `${shown} is ${info.isDirectory() ? 'a folder whose name is not UTF-8' : fileKind(info)}: list its files`)
    return
  }
  const first = await readHead(at).catch(() => Buffer.alloc(0))
  // A file named on the command line is always tried; a listed one only when it is an image (or a video, with `videos`).
  if (isLfsPointer(first)) yield lfsPointerEntry(shown)
  else if (sniffImage(first) !== 'other' || !listed) yield {input: {source: shown, read: () => readFile(shown, maxBytes, at)}}
  else if (videos && isVideoHead(first)) yield videoEntry(shown)
  else skip(skipped, 'not images')
}

/** A file named on the command line as a pattern sees it: relative to the working folder, or its name when outside. */
function givenName(p: string): string {
  const rel = relative(process.cwd(), p)
  return rel.startsWith('..') || isAbsolute(rel) ? basename(p) : rel.split(sep).join('/')
}

/** "skipped 3 (2 not images, 1 symlink loop)", or '' when nothing was skipped. */
export function skippedLine(skipped: Skipped): string {
  const total = [...skipped.values()].reduce((a, b) => a + b, 0)
  if (total === 0) return ''
  const parts = [...skipped.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([reason, n]) => plural(n, ONE[reason] ?? reason, MANY[reason] ?? reason))
  return `skipped ${total} (${parts.join(', ')})`
}

/**
 * The error to show for a file read as a video that failed: an image of a format we refuse (SVG) is not sniffed as
 * an image, and ffmpeg's "not a video" would name video formats only; libvips tells it apart from its header.
 */
export async function videoFailure(path: string, e: unknown): Promise<unknown> {
  return (isModError(e) && e.code === 'unsupported_media' && (await refusedImageFormat(path))) || e
}

/**
 * For a command that takes images and videos both (`mod hash`): videoFailure, and a file that is neither, which
 * ffmpeg refused as not a video, named as neither (a user hashing images is not told only of video formats).
 */
export async function mediaFailure(path: string, e: unknown): Promise<unknown> {
  const failure = await videoFailure(path, e)
  if (failure !== e || !isModError(e) || e.code !== 'unsupported_media') return failure
  const head = await readHead(path).catch(() => undefined)
  if (head === undefined || isVideoHead(head)) return e
  return new ModError('unsupported_media', `neither an image nor a video in a supported format (images: JPEG, PNG, WebP, GIF, AVIF, TIFF; videos: ${VIDEO_FORMATS})`, e.context)
}

/**
 * Refuses, before ffmpeg is started, what cannot be a video: a path that does not exist, anything but a regular
 * file, and a still image (an animated GIF is a video to ffmpeg, so GIF passes).
 */
export async function checkVideoFile(path: string): Promise<void> {
  let info: Stats
  try {
    info = await stat(path)
  } catch (e) {
    throw readError(path, e)
  }
  if (info.isDirectory()) throw new ModError('unsupported_media', `${path} is a folder, not a video: give one video file`)
  if (!info.isFile()) throw new ModError('unsupported_media', `${path} is ${fileKind(info)}, not a regular file`)
  const first = await readHead(path).catch((e: unknown) => Promise.reject(readError(path, e)))
  const format = imageFormat(first)
  if (format === 'PNG' && isAnimatedPng(first)) {
    throw new ModError('unsupported_media', `${path} is an animated PNG (APNG), which mod reads neither as a video nor as an image: convert it to a video, or to an animated GIF or WebP for \`mod scan\``)
  }
  if (format !== undefined && sniffImage(first) === 'refused') {
    throw new ModError('unsupported_media', `${format} images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF`)
  }
  const still = stillImageFormat(first)
  if (still !== undefined) throw new ModError('unsupported_media', `${path} is ${aFormat(still)} image, not a video: use \`mod scan\` for images`)
}

/**
 * A path named on the command line that is a regular file whose first bytes are not an image's: a video for
 * the commands that take both. Anything else (folders, images, missing paths) is for scanInputs.
 */
export async function isVideoFile(path: string): Promise<boolean> {
  if (path === '-') return false
  const info = await stat(path).catch(() => undefined)
  if (!info?.isFile()) return false
  const first = await readHead(path).catch(() => undefined)
  return first !== undefined && first.length > 0 && sniffImage(first) === 'other'
}
