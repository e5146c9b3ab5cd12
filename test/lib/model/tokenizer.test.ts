import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {ModError} from '../../../src/lib/errors.js'
import {CACHE_LIMIT, createTokenizer, loadTokenizer} from '../../../src/lib/model/tokenizer.js'

const DIR = fileURLToPath(new URL('../../../models/clip-tokenizer/', import.meta.url))
const vocab = JSON.parse(await readFile(join(DIR, 'vocab.json'), 'utf8')) as Record<string, number>
const mergeLines = (await readFile(join(DIR, 'merges.txt'), 'utf8')).split('\n').slice(1).filter(Boolean)
const tokenizer = await loadTokenizer(DIR)
const START = 49406
const END = 49407

/** Ids looked up by hand in vocab.json: the byte-level spelling of each expected piece. */
function ids(...pieces: string[]): number[] {
  return [START, ...pieces.map((p) => {
    const id = vocab[p]
    assert.ok(id !== undefined, `"${p}" is in the vocabulary`)
    return id
  }), END]
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'mod-tokenizer-'))
  try {
    await fn(dir)
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

async function expectModError(promise: Promise<unknown>, code: string): Promise<void> {
  try {
    await promise
  } catch (e) {
    assert.instance(e, ModError)
    assert.is((e as ModError).code, code)
    return
  }
  assert.unreachable(`expected a ModError ${code}`)
}

test('encodes "a photo of a cat" as CLIP does', () => {
  assert.equal(tokenizer.encode('a photo of a cat'), [49406, 320, 1125, 539, 320, 2368, 49407])
})

test('reads the start and end ids from the vocabulary and pads with the end id by default', () => {
  assert.is(tokenizer.startId, START)
  assert.is(tokenizer.endId, END)
  assert.is(tokenizer.padId, END)
})

test('splits punctuation from words', () => {
  assert.equal(tokenizer.encode('Hello, world!'), ids('hello</w>', ',</w>', 'world</w>', '!</w>'))
  assert.equal(tokenizer.encode('ok...'), ids('ok</w>', '...</w>'))
})

test('gives each digit its own token', () => {
  assert.equal(tokenizer.encode('2024'), ids('2</w>', '0</w>', '2</w>', '4</w>'))
})

test("splits English contractions ('s, 't, 'll) off the word", () => {
  assert.equal(tokenizer.encode("it's"), ids('it</w>', "'s</w>"))
  assert.equal(tokenizer.encode("don't"), ids('don</w>', "'t</w>"))
  assert.equal(tokenizer.encode("we'll"), ids('we</w>', "'ll</w>"))
})

test('lower-cases and collapses whitespace', () => {
  assert.equal(tokenizer.encode('  A   PHOTO\tof\n\n a CAT  '), tokenizer.encode('a photo of a cat'))
})

test('unescapes HTML entities, twice like CLIP', () => {
  assert.equal(tokenizer.encode('&lt;b&gt; &amp;amp; &#39;'), ids('<</w>', 'b</w>', '></w>', '&</w>', "'</w>"))
})

test('spells non-ASCII text in UTF-8 bytes, so nothing is unknown', () => {
  // é is C3 A9, shown as "Ã©" in the byte-level alphabet; 🐱 is F0 9F 90 B1.
  assert.equal(tokenizer.encode('Café'), ids('cafÃ©</w>'))
  assert.equal(tokenizer.encode('🐱'), ids('ðŁĲ±</w>'))
  // 𝔸 (F0 9D 94 B8) has no merged token: it falls back to byte pieces.
  assert.equal(tokenizer.encode('𝔸x'), ids('ðĿ', 'Ķ', '¸', 'x</w>'))
})

test('maps the special token texts to their ids', () => {
  assert.equal(tokenizer.encode('x <|endoftext|>'), [START, vocab['x</w>'], END, END])
})

test('still maps the special token texts once the BPE cache has filled and been cleared', () => {
  const t = createTokenizer(vocab, mergeLines)
  const letters = (n: number) => n.toString(26).replace(/./g, (d) => String.fromCharCode(97 + parseInt(d, 26)))
  const words = Array.from({length: CACHE_LIMIT + 1}, (_, i) => letters(i)).join(' ')
  assert.is(t.encode(words).length > CACHE_LIMIT, true)
  assert.equal(t.encode('<|startoftext|> <|endoftext|>'), [START, START, END, END])
})

test('pads each row to the context length with the pad id, mask 1 only on real tokens', () => {
  const batch = tokenizer.encodeBatchWithMask(['a photo of a cat', 'red'], 10)
  assert.equal(Array.from(batch.inputIds, Number), [
    49406, 320, 1125, 539, 320, 2368, 49407, 49407, 49407, 49407,
    49406, 736, 49407, 49407, 49407, 49407, 49407, 49407, 49407, 49407,
  ])
  assert.equal(Array.from(batch.attentionMask, Number), [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
  assert.equal(tokenizer.encodeBatch(['a photo of a cat', 'red'], 10), batch.inputIds)
})

test('truncates to the context length and keeps the end token last', () => {
  const row = Array.from(tokenizer.encodeBatch(['cat '.repeat(100)], 77), Number)
  assert.is(row.length, 77)
  assert.is(row[0], START)
  assert.equal(row.slice(1, 76), new Array(75).fill(2368))
  assert.is(row[76], END)
})

/** A fixed pseudo-random run of lower-case letters: one long word that BPE splits into many tokens. */
function letters(n: number): string {
  let x = 1
  let s = ''
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648
    s += 'abcdefghijklmnopqrstuvwxyz'[Math.floor(x / 65536) % 26]
  }
  return s
}

test('a prompt with a 1,000,000-character word is truncated like the whole word, without overflowing the stack', () => {
  const huge = `a photo of ${letters(1_000_000)}`
  const whole = tokenizer.encode(`a photo of ${letters(5_000)}`)
  assert.ok(whole.length > 1000)
  const row = Array.from(tokenizer.encodeBatch([huge], 77), Number)
  assert.equal(row, [...whole.slice(0, 76), END])
  const xs = tokenizer.encode('x'.repeat(5_000))
  assert.equal(Array.from(tokenizer.encodeBatch(['x'.repeat(1_000_000)], 77), Number), [...xs.slice(0, 76), END])
})

test('a long word cut for BPE keeps exactly the tokens the whole word gives within the context', () => {
  for (const n of [100, 200, 400, 2_000]) {
    const word = letters(n)
    const whole = tokenizer.encode(word)
    const context = 40
    const expected = whole.length > context ? [...whole.slice(0, context - 1), END] : whole
    assert.equal(Array.from(tokenizer.encodeBatch([word], context), Number).slice(0, expected.length), expected, `${n} letters`)
  }
})

test('exceeds: true exactly when the tokens, start and end included, do not fit the context', () => {
  assert.is(tokenizer.exceeds('cat '.repeat(75), 77), false)
  assert.is(tokenizer.exceeds('cat '.repeat(76), 77), true)
  assert.is(tokenizer.exceeds('1'.repeat(1_000_000), 77), true)
  assert.is(tokenizer.exceeds(letters(1_000_000), 77), true)
  assert.is(tokenizer.exceeds('a photo of a cat', 7), false)
  assert.is(tokenizer.exceeds('a photo of a cat', 6), true)
})

test('refuses a context length too short for the start and end tokens', () => {
  assert.throws(() => tokenizer.encodeBatch(['a'], 1), (e: unknown) => e instanceof ModError)
})

test('pads with the pad token tokenizer_config.json names', async () => {
  await withTempDir(async (dir) => {
    await writeFile(join(dir, 'vocab.json'), JSON.stringify(vocab))
    await writeFile(join(dir, 'merges.txt'), ['#version: 0.2', ...mergeLines].join('\n'))
    await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify({pad_token: {content: '!'}}))
    const t = await loadTokenizer(dir)
    assert.is(t.padId, 0)
    assert.equal(Array.from(t.encodeBatch(['red'], 5), Number), [START, 736, END, 0, 0])
  })
})

test('loads tokenizer.json alone, with merges as "a b" strings or as pairs', async () => {
  await withTempDir(async (dir) => {
    const text = 'Hello, 𝔸 photo of 2 cats!'
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify({model: {type: 'BPE', vocab, merges: mergeLines}}))
    assert.equal((await loadTokenizer(dir)).encode(text), tokenizer.encode(text))
    const pairs = mergeLines.map((m) => m.split(' '))
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify({model: {type: 'BPE', vocab, merges: pairs}}))
    assert.equal((await loadTokenizer(dir)).encode(text), tokenizer.encode(text))
  })
})

test('merges by rank: fewer merges give smaller pieces, and caches are not shared', () => {
  const few = createTokenizer(vocab, mergeLines.slice(0, 300))
  const all = createTokenizer(vocab, mergeLines)
  const full = all.encode('photographer')
  const partial = few.encode('photographer')
  assert.equal(full, ids('photographer</w>'))
  assert.ok(partial.length > full.length, 'the truncated merge list leaves several pieces')
  assert.equal(all.encode('photographer'), full)
  assert.equal(few.encode('photographer'), partial)
})

test('reports a folder without tokenizer files as model_missing', async () => {
  await withTempDir((dir) => expectModError(loadTokenizer(dir), 'model_missing'))
})

test('rejects a vocabulary without the special tokens', () => {
  const {['<|startoftext|>']: _start, ...withoutStart} = vocab
  assert.throws(
    () => createTokenizer(withoutStart, mergeLines),
    (e: unknown) => e instanceof ModError && e.code === 'model_unavailable',
  )
})

test('a merge line of more than two words counts its first two; a line that is not a pair of symbols is refused by rank', () => {
  const extra = createTokenizer(vocab, mergeLines.map((m) => `${m} 12`))
  assert.equal(extra.encode('photographer'), tokenizer.encode('photographer'))
  for (const bad of ['zz', 'p  h', ' h', 'p ']) {
    assert.throws(
      () => createTokenizer(vocab, [...mergeLines.slice(0, 5), bad]),
      (e: unknown) => e instanceof ModError && e.message === 'tokenizer: merge 5 is not a pair of symbols',
      JSON.stringify(bad),
    )
  }
})

test('refuses a vocab.json with an id that is not an integer', async () => {
  await withTempDir(async (dir) => {
    await writeFile(join(dir, 'vocab.json'), JSON.stringify({...vocab, red: 1.5}))
    await writeFile(join(dir, 'merges.txt'), mergeLines.join('\n'))
    await expectModError(loadTokenizer(dir), 'model_unavailable')
  })
})

test('rejects merges that produce symbols the vocabulary lacks', () => {
  assert.throws(
    () => createTokenizer(vocab, [...mergeLines, 'zzzzzz qqqqqq']),
    (e: unknown) => e instanceof ModError && e.code === 'model_unavailable',
  )
})

test.run()
