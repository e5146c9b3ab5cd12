/**
 * CLIP's byte-level BPE tokenizer, as OpenAI's `simple_tokenizer.py` and Hugging Face's CLIPTokenizer do it:
 * clean and lower-case the text, split it with CLIP's pattern, map each piece's UTF-8 bytes to printable
 * characters, merge by rank with `</w>` marking the end of a word, and wrap the ids in start/end tokens.
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

function rankMerges(merges: Merges): Map<string, number> {
  const ranks = new Map<string, number>()
  merges.forEach((merge, rank) => {
    const [a, b] = typeof merge === 'string' ? merge.split(' ') : merge
    if (!a || !b) throw invalid(`merge ${rank} is not a pair of symbols`)
    const key = mergeKey(a, b)
    if (!ranks.has(key)) ranks.set(key, rank)
  })
  return ranks
}

/** Every symbol BPE can produce must have an id, so a bad vocabulary fails here rather than mid-encode. */
function checkCoverage(vocab: Map<string, number>, ranks: Map<string, number>, bytes: string[]): void {
  for (const ch of bytes) {
    if (!vocab.has(ch) || !vocab.has(ch + END_OF_WORD)) throw invalid(`byte symbol "${ch}" is not in the vocabulary`)
  }
  for (const key of ranks.keys()) {
    if (!vocab.has(key.replace(' ', ''))) throw invalid(`merge "${key}" gives a symbol that is not in the vocabulary`)
  }
}

/** Merges a word's symbols, lowest rank first, until no ranked pair is left. */
function bytePairMerge(symbols: string[], ranks: Map<string, number>): string[] {
  let word = symbols
  while (word.length > 1) {
    let best = -1
    let bestRank = Infinity
    for (let i = 0; i < word.length - 1; i++) {
      const rank = ranks.get(mergeKey(word[i], word[i + 1]))
      if (rank !== undefined && rank < bestRank) {
        bestRank = rank
        best = i
      }
    }
    if (best < 0) break
    const first = word[best]
    const second = word[best + 1]
    const next: string[] = []
    for (let i = 0; i < word.length; i++) {
      if (i < word.length - 1 && word[i] === first && word[i + 1] === second) {
        next.push(first + second)
        i++
      } else {
        next.push(word[i])
      }
    }
    word = next
  }
  return word
}

function checkContextLength(contextLength: number): void {
  if (!Number.isInteger(contextLength) || contextLength < 2) {
    throw new ModError('internal', `context length must be an integer of at least 2, got ${contextLength}`)
  }
}

function specialId(vocab: Map<string, number>, token: string): number {
  const id = vocab.get(token)
  if (id === undefined) throw invalid(`the vocabulary lacks ${token}`)
  return id
}

export function createTokenizer(
  vocabulary: Record<string, number>,
  merges: Merges,
  opts: TokenizerOptions = {},
): ClipTokenizer {
  const vocab = new Map(Object.entries(vocabulary))
  const startId = specialId(vocab, START_TOKEN)
  const endId = specialId(vocab, END_TOKEN)
  const padId = opts.padId ?? endId
  const bytes = byteToUnicode()
  const ranks = rankMerges(merges)
  checkCoverage(vocab, ranks, bytes)
  const specials = new Map([
    [START_TOKEN, [startId]],
    [END_TOKEN, [endId]],
  ])
  const cache = new Map<string, number[]>()
  const encoder = new TextEncoder()

  function idOf(symbol: string): number {
    const id = vocab.get(symbol)
    if (id === undefined) throw invalid(`symbol "${symbol}" is not in the vocabulary`)
    return id
  }

  function encodePiece(piece: string): number[] {
    const cached = specials.get(piece) ?? cache.get(piece)
    if (cached) return cached
    const symbols = Array.from(encoder.encode(piece), (b) => bytes[b])
    symbols[symbols.length - 1] += END_OF_WORD
    const ids = bytePairMerge(symbols, ranks).map(idOf)
    if (cache.size >= CACHE_LIMIT) cache.clear()
    cache.set(piece, ids)
    return ids
  }

  function encode(text: string): number[] {
    const ids = [startId]
    for (const match of cleanText(text).matchAll(SPLIT_PATTERN)) ids.push(...encodePiece(match[0]))
    ids.push(endId)
    return ids
  }

  function encodeBatchWithMask(texts: string[], contextLength: number): EncodedBatch {
    checkContextLength(contextLength)
    const inputIds = new BigInt64Array(texts.length * contextLength).fill(BigInt(padId))
    const attentionMask = new BigInt64Array(texts.length * contextLength)
    texts.forEach((text, row) => {
      const ids = encode(text)
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

  return {
    startId,
    endId,
    padId,
    encode,
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

function isVocabulary(value: unknown): value is Record<string, number> {
  return isRecord(value) && Object.values(value).every((id) => Number.isInteger(id))
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

async function readVocabAndMerges(dir: string): Promise<{vocab: Record<string, number>; merges: Merges}> {
  const vocab = await readJson(join(dir, 'vocab.json'))
  if (!isVocabulary(vocab)) throw invalid('vocab.json is not a map of token to id')
  const merges = (await readFile(join(dir, 'merges.txt'), 'utf8'))
    .split(/\r?\n/)
    .filter((line, i) => line !== '' && !(i === 0 && line.startsWith('#version')))
  return {vocab, merges}
}

function vocabAndMergesOf(tokenizerJson: Record<string, unknown>): {vocab: Record<string, number>; merges: Merges} {
  const model = tokenizerJson.model
  if (!isRecord(model) || !isVocabulary(model.vocab) || !isMerges(model.merges)) {
    throw invalid('tokenizer.json has no BPE model with vocab and merges')
  }
  return {vocab: model.vocab, merges: model.merges}
}

/** Loads the tokenizer of a model folder: vocab.json + merges.txt when present, else tokenizer.json. */
export async function loadTokenizer(dir: string): Promise<ClipTokenizer> {
  let files: {vocab: Record<string, number>; merges: Merges}
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
    padId = Object.hasOwn(files.vocab, padToken) ? files.vocab[padToken] : undefined
    if (padId === undefined) throw invalid(`pad token "${padToken}" is not in the vocabulary`)
  }
  return createTokenizer(files.vocab, files.merges, {padId})
}
