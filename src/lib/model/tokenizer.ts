/**
 * CLIP's byte-level BPE tokenizer, as OpenAI's `simple_tokenizer.py` and Hugging Face's CLIPTokenizer do it:
 * clean and lower-case the text, split it with CLIP's pattern, map each piece's UTF-8 bytes to printable
 * characters, merge by rank with `</w>` marking the end of a word, and wrap the ids in start/end tokens.
 *
 * Encoding for a context of N tokens does bounded work whatever the text: words stop being read once N tokens
 * are collected, and BPE (quadratic in a word's length) runs on at most the first M × (longest vocabulary
 * symbol) bytes of a word, M being the tokens still free in the context, since more bytes cannot fit. A word
 * cut so gets no end-of-word mark, as it continues past the cut.
 */
import {access, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {ModError} from '../errors.js'

const START_TOKEN = '<|startoftext|>'
const END_TOKEN = '<|endoftext|>'
const END_OF_WORD = '</w>'
const SPLIT_PATTERN =
  /<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+/giu
/** Bounds the per-instance BPE cache: prompts repeat, but arbitrary text must not grow memory without end. */
export const CACHE_LIMIT = 10_000

export type Merges = string[] | [string, string][]

export interface TokenizerOptions {
  /** Id written after the end token up to the context length; defaults to the end token's id. */
  padId?: number
}

export interface EncodedBatch {
  /** Row-major [n, contextLength] token ids, padded. */
  inputIds: BigInt64Array
  /** Same shape: 1 for real tokens (start and end included), 0 for padding. */
  attentionMask: BigInt64Array
}

export interface ClipTokenizer {
  readonly startId: number
  readonly endId: number
  readonly padId: number
  /** Token ids of one text, with start and end tokens, neither truncated nor padded. */
  encode(text: string): number[]
  /** Whether encodeBatch truncates this text to fit contextLength tokens (start and end included). */
  exceeds(text: string, contextLength: number): boolean
  /** Ids for a text encoder's `input_ids`: truncated to contextLength (end token kept last), then padded. */
  encodeBatch(texts: string[], contextLength: number): BigInt64Array
  /** encodeBatch plus the attention mask, for encoders that take one. */
  encodeBatchWithMask(texts: string[], contextLength: number): EncodedBatch
}

/** GPT-2's reversible byte → printable character table, so that every byte is a vocabulary symbol. */
function byteToUnicode(): string[] {
  const printable: number[] = []
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b)
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b)
  for (let b = 0xae; b <= 0xff; b++) printable.push(b)
  const table: string[] = new Array(256)
  let shifted = 0
  for (let b = 0; b < 256; b++) {
    table[b] = String.fromCodePoint(printable.includes(b) ? b : 256 + shifted++)
  }
  return table
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
}

function codePointOrReplacement(n: number): string {
  const valid = n > 0 && n <= 0x10ffff && !(n >= 0xd800 && n <= 0xdfff)
  return valid ? String.fromCodePoint(n) : '\ufffd'
}

/** The common HTML entities (numeric and the few named ones prompts carry), like Python's html.unescape. */
function htmlUnescape(text: string): string {
  return text.replace(/&(#[0-9]+|#[xX][0-9a-fA-F]+|[a-zA-Z]+);/g, (whole, body: string) => {
    if (body.startsWith('#x') || body.startsWith('#X')) return codePointOrReplacement(parseInt(body.slice(2), 16))
    if (body.startsWith('#')) return codePointOrReplacement(parseInt(body.slice(1), 10))
    return NAMED_ENTITIES[body] ?? whole
  })
}

/** simple_tokenizer's basic_clean + whitespace_clean + lower(); NFC stands in for ftfy's normalisation. */
function cleanText(text: string): string {
  return htmlUnescape(htmlUnescape(text.normalize('NFC')))
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase()
}

function invalid(message: string): ModError {
  return new ModError('model_unavailable', `tokenizer: ${message}`)
}

function mergeKey(a: string, b: string): string {
  return `${a} ${b}`
}

/**
 * A merge's key "a b" and the symbol it makes, or undefined when it is not a pair of symbols. A line of merges.txt
 * is "a b" (more words: the first two), and is its own key: slicing it spares splitting and joining each of CLIP's
 * 48 894 lines. tokenizer.json may hold the pair.
 */
function mergeOf(merge: string | [string, string]): {key: string; symbol: string} | undefined {
  if (typeof merge !== 'string') return merge[0] && merge[1] ? {key: mergeKey(merge[0], merge[1]), symbol: merge[0] + merge[1]} : undefined
  const space = merge.indexOf(' ')
  const next = merge.indexOf(' ', space + 1)
  const key = next < 0 ? merge : merge.slice(0, next)
  if (space <= 0 || space === key.length - 1) return undefined
  return {key, symbol: key.slice(0, space) + key.slice(space + 1)}
}

/**
 * Each merge's rank, under its key "a b"; every symbol a merge makes must have an id, so a bad vocabulary fails
 * here rather than mid-encode.
 */
function rankMerges(merges: Merges, vocab: Map<string, number>): Map<string, number> {
  const ranks = new Map<string, number>()
  for (let rank = 0; rank < merges.length; rank++) {
    const merge = mergeOf(merges[rank])
    if (!merge) throw invalid(`merge ${rank} is not a pair of symbols`)
    if (ranks.has(merge.key)) continue
    if (!vocab.has(merge.symbol)) throw invalid(`merge "${merge.key}" gives a symbol that is not in the vocabulary`)
    ranks.set(merge.key, rank)
  }
  return ranks
}

/** Every byte, alone and ending a word, must have an id: BPE starts from them. */
function checkBytes(vocab: Map<string, number>, bytes: string[]): void {
  for (const ch of bytes) {
    if (!vocab.has(ch) || !vocab.has(ch + END_OF_WORD)) throw invalid(`byte symbol "${ch}" is not in the vocabulary`)
  }
}

/**
 * Merges a word's symbols, lowest rank first, until no ranked pair is left; every occurrence of the chosen pair
 * is merged in one left-to-right pass. The rank of each adjacent pair is kept in an array and looked up again
 * only beside a merge, so a pass costs integer comparisons rather than a string key per pair.
 */
function bytePairMerge(symbols: string[], ranks: Map<string, number>): string[] {
  const rankOf = (a: string, b: string): number => ranks.get(mergeKey(a, b)) ?? Infinity
  let word = symbols
  let pairRanks = word.slice(1).map((s, i) => rankOf(word[i], s))
  while (word.length > 1) {
    let best = -1
    let bestRank = Infinity
    for (let i = 0; i < pairRanks.length; i++) {
      if (pairRanks[i] < bestRank) {
        bestRank = pairRanks[i]
        best = i
      }
    }
    if (best < 0) break
    const first = word[best]
    const second = word[best + 1]
    const next: string[] = []
    /** For each symbol of `next`: its index in `word`, or -1 when it is a new merge. */
    const from: number[] = []
    for (let i = 0; i < word.length; i++) {
      if (i < word.length - 1 && word[i] === first && word[i + 1] === second) {
        next.push(first + second)
        from.push(-1)
        i++
      } else {
        next.push(word[i])
        from.push(i)
      }
    }
    const nextRanks: number[] = new Array(next.length - 1)
    for (let j = 0; j < next.length - 1; j++) {
      nextRanks[j] = from[j] >= 0 && from[j + 1] >= 0 ? pairRanks[from[j]] : rankOf(next[j], next[j + 1])
    }
    word = next
    pairRanks = nextRanks
  }
  return word
}

/**
 * At least the most bytes one token can stand for: the length of the longest symbol, each of its characters standing
 * for one byte (a character outside the byte alphabet only makes the bound larger, which is safe).
 */
function longestSymbolBytes(vocab: Map<string, number>): number {
  let longest = 1
  for (const symbol of vocab.keys()) longest = Math.max(longest, symbol.endsWith(END_OF_WORD) ? symbol.length - END_OF_WORD.length : symbol.length)
  return longest
}

function checkContextLength(contextLength: number): void {
  if (!Number.isInteger(contextLength) || contextLength < 2) {
    throw new ModError('internal', `context length must be an integer of at least 2, got ${contextLength}`)
  }
}

function idOf(vocab: Map<string, number>, symbol: string): number {
  const id = vocab.get(symbol)
  if (id === undefined) throw invalid(`symbol "${symbol}" is not in the vocabulary`)
  return id
}

function specialId(vocab: Map<string, number>, token: string): number {
  const id = vocab.get(token)
  if (id === undefined) throw invalid(`the vocabulary lacks ${token}`)
  return id
}

/** Rows of ids cut to contextLength (the end token kept last) and padded with padId, with their attention mask. */
function padRows(rows: number[][], contextLength: number, padId: number, endId: number): EncodedBatch {
  const inputIds = new BigInt64Array(rows.length * contextLength).fill(BigInt(padId))
  const attentionMask = new BigInt64Array(rows.length * contextLength)
  rows.forEach((ids, row) => {
    if (ids.length > contextLength) {
      ids.length = contextLength
      ids[contextLength - 1] = endId
    }
    const offset = row * contextLength
    ids.forEach((id, i) => {
      inputIds[offset + i] = BigInt(id)
      attentionMask[offset + i] = 1n
    })
  })
  return {inputIds, attentionMask}
}

export function createTokenizer(
  vocabulary: Record<string, number> | ReadonlyMap<string, number>,
  merges: Merges,
  opts: TokenizerOptions = {},
): ClipTokenizer {
  const vocab = vocabulary instanceof Map ? vocabulary : new Map(Object.entries(vocabulary))
  const startId = specialId(vocab, START_TOKEN)
  const endId = specialId(vocab, END_TOKEN)
  const padId = opts.padId ?? endId
  const bytes = byteToUnicode()
  checkBytes(vocab, bytes)
  const ranks = rankMerges(merges, vocab)
  const specials = new Map([
    [START_TOKEN, [startId]],
    [END_TOKEN, [endId]],
  ])
  const cache = new Map<string, number[]>()
  const encoder = new TextEncoder()
  const longestSymbol = longestSymbolBytes(vocab)

  const mergeToIds = (symbols: string[]): number[] => bytePairMerge(symbols, ranks).map((symbol) => idOf(vocab, symbol))

  /** A piece's ids; past maxBytes bytes the word is cut (and not cached), as those bytes cannot be kept. */
  function encodePiece(piece: string, maxBytes: number): number[] {
    const cached = specials.get(piece) ?? cache.get(piece)
    if (cached) return cached
    const utf8 = encoder.encode(piece)
    if (utf8.length > maxBytes) return mergeToIds(Array.from(utf8.subarray(0, maxBytes), (b) => bytes[b]))
    const symbols = Array.from(utf8, (b) => bytes[b])
    symbols[symbols.length - 1] += END_OF_WORD
    const ids = mergeToIds(symbols)
    if (cache.size >= CACHE_LIMIT) cache.clear()
    cache.set(piece, ids)
    return ids
  }

  /**
   * Start token, the pieces' ids and the end token. With a limit, pieces stop being read once `limit` ids are
   * collected, so the result is longer than `limit` exactly when the whole text would be.
   */
  function encodeUpTo(text: string, limit: number): number[] {
    const ids = [startId]
    for (const match of cleanText(text).matchAll(SPLIT_PATTERN)) {
      if (ids.length >= limit) break
      // No more than limit - ids.length of this piece's tokens can be kept.
      const maxBytes = Number.isFinite(limit) ? (limit - ids.length) * longestSymbol : Infinity
      for (const id of encodePiece(match[0], maxBytes)) ids.push(id)
    }
    ids.push(endId)
    return ids
  }

  function exceeds(text: string, contextLength: number): boolean {
    checkContextLength(contextLength)
    return encodeUpTo(text, contextLength).length > contextLength
  }

  function encodeBatchWithMask(texts: string[], contextLength: number): EncodedBatch {
    checkContextLength(contextLength)
    return padRows(texts.map((text) => encodeUpTo(text, contextLength)), contextLength, padId, endId)
  }

  return {
    startId,
    endId,
    padId,
    encode: (text) => encodeUpTo(text, Infinity),
    exceeds,
    encodeBatch: (texts, contextLength) => encodeBatchWithMask(texts, contextLength).inputIds,
    encodeBatchWithMask,
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

async function readJson(path: string): Promise<unknown> {
  const text = await readFile(path, 'utf8')
  try {
    return JSON.parse(text)
  } catch {
    throw invalid(`${path} is not valid JSON`)
  }
}

async function readOptionalJson(path: string): Promise<Record<string, unknown> | undefined> {
  if (!(await exists(path))) return undefined
  const value = await readJson(path)
  return isRecord(value) ? value : undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A parsed vocabulary as a map of symbol to id, or undefined unless every id is an integer: one pass over its 49 408 keys. */
function vocabularyMap(value: unknown): Map<string, number> | undefined {
  if (!isRecord(value)) return undefined
  const vocab = new Map<string, number>()
  for (const symbol in value) {
    const id = value[symbol]
    if (!Number.isInteger(id)) return undefined
    vocab.set(symbol, id as number)
  }
  return vocab
}

function isMerges(value: unknown): value is Merges {
  return (
    Array.isArray(value) &&
    value.every(
      (m) => typeof m === 'string' || (Array.isArray(m) && m.length === 2 && m.every((s) => typeof s === 'string')),
    )
  )
}

/** A special-token entry is either the token text or an AddedToken object with `content`. */
function tokenText(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry
  if (isRecord(entry) && typeof entry.content === 'string') return entry.content
  return undefined
}

/** The pad token the folder's files name (tokenizer_config, special_tokens_map, tokenizer.json), if any. */
async function namedPadToken(dir: string, tokenizerJson?: Record<string, unknown>): Promise<string | undefined> {
  const config = await readOptionalJson(join(dir, 'tokenizer_config.json'))
  const specialTokens = await readOptionalJson(join(dir, 'special_tokens_map.json'))
  const padding = tokenizerJson?.padding
  return (
    tokenText(config?.pad_token) ??
    tokenText(specialTokens?.pad_token) ??
    (isRecord(padding) ? tokenText(padding.pad_token) : undefined)
  )
}

async function readVocabAndMerges(dir: string): Promise<{vocab: Map<string, number>; merges: Merges}> {
  const vocab = vocabularyMap(await readJson(join(dir, 'vocab.json')))
  if (!vocab) throw invalid('vocab.json is not a map of token to id')
  const merges = (await readFile(join(dir, 'merges.txt'), 'utf8'))
    .split(/\r?\n/)
    .filter((line, i) => line !== '' && !(i === 0 && line.startsWith('#version')))
  return {vocab, merges}
}

function vocabAndMergesOf(tokenizerJson: Record<string, unknown>): {vocab: Map<string, number>; merges: Merges} {
  const model = tokenizerJson.model
  const vocab = isRecord(model) ? vocabularyMap(model.vocab) : undefined
  if (!isRecord(model) || !vocab || !isMerges(model.merges)) {
    throw invalid('tokenizer.json has no BPE model with vocab and merges')
  }
  return {vocab, merges: model.merges}
}

/** Loads the tokenizer of a model folder: vocab.json + merges.txt when present, else tokenizer.json. */
export async function loadTokenizer(dir: string): Promise<ClipTokenizer> {
  let files: {vocab: Map<string, number>; merges: Merges}
  let tokenizerJson: Record<string, unknown> | undefined
  if ((await exists(join(dir, 'vocab.json'))) && (await exists(join(dir, 'merges.txt')))) {
    files = await readVocabAndMerges(dir)
  } else if (await exists(join(dir, 'tokenizer.json'))) {
    tokenizerJson = await readOptionalJson(join(dir, 'tokenizer.json'))
    if (!tokenizerJson) throw invalid('tokenizer.json is not a JSON object')
    files = vocabAndMergesOf(tokenizerJson)
  } else {
    throw new ModError('model_missing', `no tokenizer in ${dir} (vocab.json + merges.txt, or tokenizer.json)`)
  }
  const padToken = await namedPadToken(dir, tokenizerJson)
  let padId: number | undefined
  if (padToken !== undefined) {
    padId = files.vocab.get(padToken)
    if (padId === undefined) throw invalid(`pad token "${padToken}" is not in the vocabulary`)
  }
  return createTokenizer(files.vocab, files.merges, {padId})
}
