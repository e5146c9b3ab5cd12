import {createHash} from 'node:crypto'
import type {ItemResult} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import {readFileCapped} from '../lib/input/read-capped.js'
import type {ScanItem} from './inputs.js'

/**
 * A baseline: the flagged images a team has reviewed and accepts, so that a CI gate fails only on new ones.
 * Items are keyed by the sha256 of the file's bytes: a renamed or moved file stays accepted, a changed one does
 * not. Each keeps the categories it was flagged for; a later violation of another category is not accepted.
 *
 * ```json
 * {"version": 1, "items": [{"sha256": "<64 hex>", "source": "photos/a.png", "categories": ["weapons"]}]}
 * ```
 * `source` is where the image was when the baseline was written, for people reading the file; matching ignores it.
 */
export const BASELINE_VERSION = 1
const MAX_BASELINE_BYTES = 64 * 1024 * 1024

export interface BaselineItem {
  sha256: string
  source: string
  categories: string[]
}

/** The accepted categories per content hash. */
export type Baseline = ReadonlyMap<string, ReadonlySet<string>>

function invalid(path: string, why: string): ModError {
  return new ModError('invalid_config', `the baseline ${path} is not valid: ${why}`)
}

export async function readBaseline(path: string): Promise<Baseline> {
  let text: string
  try {
    text = (await readFileCapped(path, MAX_BASELINE_BYTES)).toString('utf8')
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new ModError('invalid_config', `the baseline ${path} does not exist (--write-baseline ${path} writes one)`)
    throw new ModError('invalid_config', `cannot read the baseline ${path}: ${e instanceof ModError ? e.message : (code ?? String(e))}`)
  }
  let data: unknown
  try {
    // An editor may start UTF-8 with a byte order mark, which JSON readers may ignore (RFC 8259).
    data = JSON.parse(text.replace(/^\uFEFF/, ''))
  } catch (e) {
    throw invalid(path, (e as Error).message)
  }
  const doc = data as {version?: unknown; items?: unknown}
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw invalid(path, 'expected a JSON object')
  if (doc.version !== BASELINE_VERSION) throw invalid(path, `version ${JSON.stringify(doc.version)} is not ${BASELINE_VERSION}, the one this mod reads`)
  if (!Array.isArray(doc.items)) throw invalid(path, 'items must be an array')
  const accepted = new Map<string, Set<string>>()
  doc.items.forEach((raw: unknown, i) => {
    const it = raw as Partial<BaselineItem>
    if (typeof it?.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(it.sha256)) throw invalid(path, `items[${i}].sha256 must be 64 lowercase hex digits`)
    if (!Array.isArray(it.categories) || !it.categories.every((c) => typeof c === 'string')) throw invalid(path, `items[${i}].categories must be an array of names`)
    const set = accepted.get(it.sha256) ?? new Set<string>()
    for (const c of it.categories) set.add(c)
    accepted.set(it.sha256, set)
  })
  return accepted
}

/** Whether the baseline accepts a flagged result: its bytes are listed, with every category it violates now. */
export function isAccepted(baseline: Baseline | undefined, item: ItemResult, sha256: string | undefined): boolean {
  if (!baseline || sha256 === undefined || 'error' in item || item.is_safe) return false
  const categories = baseline.get(sha256)
  return categories !== undefined && item.violations.every((v) => categories.has(v.name))
}

/** The baseline file's text for these flagged items, sorted by source so that its diffs read well. */
export function baselineText(items: readonly BaselineItem[]): string {
  const sorted = [...items].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.sha256 < b.sha256 ? -1 : 1))
  const lines = sorted.map((it) => `    ${JSON.stringify({sha256: it.sha256, source: it.source, categories: [...it.categories].sort()})}`)
  return `{\n  "version": ${BASELINE_VERSION},\n  "items": [${lines.length > 0 ? `\n${lines.join(',\n')}\n  ` : ''}]\n}\n`
}

/**
 * The inputs with their bytes hashed as the engine reads them (no second read): `hashes` gets each source's
 * sha256 once its bytes are in.
 */
export async function* hashedInputs(items: AsyncIterable<ScanItem>, hashes: Map<string, string>): AsyncGenerator<ScanItem> {
  for await (const item of items) {
    if ('entry' in item) {
      yield item
      continue
    }
    const {source, read} = item.input
    yield {
      input: {
        ...item.input,
        read: async () => {
          const bytes = await read()
          hashes.set(source, createHash('sha256').update(bytes).digest('hex'))
          return bytes
        },
      },
    }
  }
}
