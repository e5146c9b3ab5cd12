import {spawnSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdir, mkdtemp, readdir, readFile, rm, truncate, utimes, writeFile} from 'node:fs/promises'
import {hostname, tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hammingDistance, hashToHex} from '../../../../src/lib/signals/pdq/hash256.js'
import {loadHashList, SHARED_FROM_BYTES, type LoadedList} from '../../../../src/lib/signals/pdq/list-load.js'
import {FORMAT} from '../../../../src/lib/signals/pdq/list-map.js'
import {matchHash} from '../../../../src/lib/signals/pdq/match.js'
import {rejection} from '../../../helpers/errors.js'
import {random} from '../../../helpers/nsfw-images.js'
import {flip, randomHash} from '../../../helpers/pdq-hashes.js'

const A = 'ab'.repeat(32)
const B = '0f'.repeat(32)

const sha = (text: string): string => createHash('sha256').update(text).digest('hex')

async function withDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'mod-pdqmap-'))
  try {
    await run(dir)
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

/** The entries of the cache folder that are not stamps. */
const entries = async (cacheDir: string): Promise<string[]> => (await readdir(join(cacheDir, 'hash-lists'))).filter((n) => !n.endsWith('.json') && !n.endsWith('.lock')).sort()

test('the cache lives under the cache folder, in a folder named by the list text\'s SHA-256 and the format; nothing is written beside the list', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    const text = `${A},a\n${B},b,note\n`
    await writeFile(file, text)
    const cacheDir = join(dir, 'cache')
    const first = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(first.from, 'text')
    assert.equal(await readdir(dir), ['cache', 'list.txt'])
    assert.equal(await entries(cacheDir), [`${sha(text)}-v${FORMAT}`])
    assert.equal((await readdir(join(cacheDir, 'hash-lists', `${sha(text)}-v${FORMAT}`))).sort(), ['fetch.onnx', 'index.bin', 'probe.onnx'])
    const second = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(second.from, 'cache')
    assert.equal(await second.search([Buffer.from(B, 'hex')], 0), await first.search([Buffer.from(B, 'hex')], 0))
    const [[hit]] = await second.search([Buffer.from(B, 'hex')], 0)
    assert.equal([hit.id, hit.distance, hashToHex(hit.hash), hit.label, hit.note], [1, 0, B, 'b', 'note'])
    await Promise.all([first.close(), second.close()])
  })
})

test('a changed list is indexed again and its old cache folder removed (and any of an older format), even when size and modification time stay the same', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    const cacheDir = join(dir, 'cache')
    const when = new Date('2026-01-01T00:00:00Z')
    await writeFile(file, `${A},a\n${B},b\n`)
    await utimes(file, when, when)
    await (await loadHashList(file, 'l', {cacheDir, shared: true})).close()
    await mkdir(join(cacheDir, 'hash-lists', `${'0'.repeat(64)}-v0`))
    await writeFile(file, `${B},a\n${A},b\n`)
    await utimes(file, when, when)
    const changed = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(changed.from, 'text')
    assert.equal(await entries(cacheDir), [`${sha(`${B},a\n${A},b\n`)}-v${FORMAT}`])
    const [[hit]] = await changed.search([Buffer.from(B, 'hex')], 0)
    assert.equal([hit.id, hit.label], [0, 'a'])
    await changed.close()
    const again = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(again.from, 'cache')
    await again.close()
  })
})

test('lookups through the mapped cache equal the in-memory search and a full scan, near and far hashes, thresholds 0-43', async () => {
  await withDir(async (dir) => {
    const next = random(11)
    const base = Array.from({length: 3000}, () => randomHash(next))
    // Near copies of listed hashes (distances 0-40), and unrelated ones.
    const queries = [...base.slice(0, 120).map((h, i) => flip(h, i % 41, next)), ...Array.from({length: 20}, () => randomHash(next))]
    const file = join(dir, 'list.txt')
    await writeFile(file, base.map((h, i) => `${hashToHex(h)},n${i % 7}${i % 2 ? `,note ${i}` : ''}`).join('\n'))
    const memory = await loadHashList(file, 'l')
    const built = await loadHashList(file, 'l', {cacheDir: join(dir, 'cache'), shared: true})
    const mapped = await loadHashList(file, 'l', {cacheDir: join(dir, 'cache'), shared: true})
    assert.equal([memory.from, built.from, mapped.from], ['text', 'text', 'cache'])
    for (const threshold of [0, 9, 10, 21, 31, 43]) {
      const expected = await memory.search(queries, threshold)
      assert.equal(await mapped.search(queries, threshold), expected)
      assert.equal(await built.search(queries, threshold), expected)
      queries.forEach((q, k) => {
        const scan = base.map((h, id) => ({id, distance: hammingDistance(h, q)})).filter((h) => h.distance <= threshold)
        scan.sort((a, b) => a.distance - b.distance || a.id - b.id)
        assert.equal(expected[k].map((h) => ({id: h.id, distance: h.distance})), scan)
      })
    }
    const image = {hash: queries[5], quality: 90, stored: queries[7]}
    assert.equal(await matchHash([mapped], image), await matchHash([memory], image))
    assert.ok((await matchHash([mapped], image)).length >= 2)
    await Promise.all([memory, built, mapped].map((l: LoadedList) => l.close()))
  })
})

test('a cut or damaged cache file is refused and built anew from the text', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    const next = random(5)
    const text = Array.from({length: 50}, (_, i) => `${hashToHex(randomHash(next))},case-${i % 3}`).join('\n')
    await writeFile(file, text)
    const cacheDir = join(dir, 'cache')
    const folder = join(cacheDir, 'hash-lists', `${sha(text)}-v${FORMAT}`)
    const first = await loadHashList(file, 'l', {cacheDir, shared: true})
    const probe = [Buffer.from(text.slice(0, 64), 'hex')]
    const expected = await first.search(probe, 31)
    await first.close()
    const good = await readFile(join(folder, 'index.bin'))
    const damage: [string, () => Promise<void>][] = [
      ['a cut file', () => truncate(join(folder, 'index.bin'), good.length - 100)],
      ['a longer file', () => writeFile(join(folder, 'index.bin'), Buffer.concat([good, Buffer.alloc(8)]))],
      ['another magic', () => writeFile(join(folder, 'index.bin'), Buffer.concat([Buffer.from('XXXXXXXX'), good.subarray(8)]))],
      ['another list\'s SHA-256', () => writeFile(join(folder, 'index.bin'), Buffer.concat([good.subarray(0, 32), Buffer.alloc(32), good.subarray(64)]))],
      ['a count one higher', () => writeFile(join(folder, 'index.bin'), (() => { const b = Buffer.from(good); b.writeUInt32LE(51, 12); return b })())],
      ['record texts that are not JSON', () => writeFile(join(folder, 'index.bin'), Buffer.from(good).fill(32, good.length - 10))],
      ['a graph that is not ONNX', () => writeFile(join(folder, 'probe.onnx'), 'not a model')],
      ['a missing graph', () => rm(join(folder, 'fetch.onnx'))],
    ]
    for (const [what, harm] of damage) {
      await harm()
      const again = await loadHashList(file, 'l', {cacheDir, shared: true})
      assert.is(again.from, 'text', what)
      assert.equal(await again.search(probe, 31), expected, what)
      await again.close()
      assert.equal(await readFile(join(folder, 'index.bin')), good, what)
      const whole = await loadHashList(file, 'l', {cacheDir, shared: true})
      assert.is(whole.from, 'cache', what)
      await whole.close()
    }
  })
})

test('bucket bounds out of range in the bulk of the file (not read at start) fail the lookup with a message naming the folder', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    const next = random(6)
    const text = Array.from({length: 50}, () => hashToHex(randomHash(next))).join('\n')
    await writeFile(file, text)
    const cacheDir = join(dir, 'cache')
    const folder = join(cacheDir, 'hash-lists', `${sha(text)}-v${FORMAT}`)
    await (await loadHashList(file, 'l', {cacheDir, shared: true})).close()
    // 50 hashes: a page of header, 50 rows of 36 bytes, then (from 8192) the offset tables.
    const bytes = await readFile(join(folder, 'index.bin'))
    bytes.fill(0xff, 8192, 8192 + 11 * 1025 * 4)
    await writeFile(join(folder, 'index.bin'), bytes)
    const list = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(list.from, 'cache')
    const e = await rejection(list.search([Buffer.from(text.slice(0, 64), 'hex')], 31))
    assert.is(e.code, 'internal')
    assert.is(e.message, `the hash list cache ${folder} is damaged (a bucket out of bounds); delete the folder and start again to rebuild it`)
    await list.close()
  })
})

test('workers starting together on a new list all get it: one builds it while the others wait; one cache folder, no temporary files', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    await writeFile(file, `${A},a\n${B},b\n`)
    const cacheDir = join(dir, 'cache')
    const lists = await Promise.all(Array.from({length: 4}, () => loadHashList(file, 'l', {cacheDir, shared: true})))
    assert.equal(lists.map((l) => l.from).sort(), ['cache', 'cache', 'cache', 'text'])
    for (const l of lists) assert.equal((await l.search([Buffer.from(A, 'hex')], 0))[0].map((h) => h.label), ['a'])
    assert.equal(await entries(cacheDir), [`${sha(`${A},a\n${B},b\n`)}-v${FORMAT}`])
    assert.is((await readdir(join(cacheDir, 'hash-lists'))).filter((n) => n.includes('tmp') || n.endsWith('.lock')).length, 0)
    await Promise.all(lists.map((l) => l.close()))
  })
})

test('a build lock left by a process that died is taken over', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    const text = `${A},a\n`
    await writeFile(file, text)
    const cacheDir = join(dir, 'cache')
    await mkdir(join(cacheDir, 'hash-lists'), {recursive: true})
    // The pid of a process that has ended.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid
    await writeFile(join(cacheDir, 'hash-lists', `${sha(text)}-v${FORMAT}.lock`), `${hostname()} ${gone}`)
    const list = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(list.from, 'text')
    assert.equal(await entries(cacheDir), [`${sha(text)}-v${FORMAT}`])
    await list.close()
  })
})

test('a list without a hash (comments alone) needs no cache and matches nothing', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    await writeFile(file, '# nothing listed yet\n')
    const list = await loadHashList(file, 'l', {cacheDir: join(dir, 'cache'), shared: true})
    assert.equal([list.from, list.count], ['text', 0])
    assert.equal(await list.search([Buffer.from(A, 'hex')], 31), [[]])
    assert.equal(await readdir(join(dir, 'cache', 'hash-lists')), [])
  })
})

test('a list under 16 MiB is each process\'s own by default (shared: false too): no cache is written, lookups are the same', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    await writeFile(file, `${A},a\n`)
    const cacheDir = join(dir, 'cache')
    for (const shared of [undefined, false]) {
      const list = await loadHashList(file, 'l', {cacheDir, shared})
      assert.is(list.from, 'text')
      assert.equal((await list.search([Buffer.from(A, 'hex')], 0))[0].map((h) => h.label), ['a'])
    }
    assert.equal(await readdir(cacheDir).catch(() => []), [])
    assert.is(SHARED_FROM_BYTES, 16 * 1024 * 1024)
  })
})

test('a cache folder that cannot be written leaves the list in memory', async () => {
  await withDir(async (dir) => {
    const file = join(dir, 'list.txt')
    await writeFile(file, `${A},a\n`)
    // A file where the cache folder should be: nothing can be made inside it.
    const cacheDir = join(dir, 'not-a-folder')
    await writeFile(cacheDir, '')
    const list = await loadHashList(file, 'l', {cacheDir, shared: true})
    assert.is(list.from, 'text')
    assert.equal((await list.search([Buffer.from(A, 'hex')], 0))[0].map((h) => h.label), ['a'])
  })
})

test.run()
