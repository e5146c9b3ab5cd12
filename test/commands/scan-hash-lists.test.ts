// `mod scan` with a policy's hash lists: the listed photo and a re-encoded, resized copy are known_bad and their rows
// name the list, label and distance; an unrelated photo is not matched; a bad list line stops the scan.
import {existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {hammingDistance, hashFromHex} from '../../src/lib/signals/pdq/hash256.js'
import {hashImage} from '../../src/lib/signals/pdq/hash-media.js'
import {ROOT, runCli, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const PHOTOS = join(ROOT, 'test', 'fixtures', 'photos')
const folder = join(dir.path, 'uploads')
let hash = ''
let distance = 0

function writePolicy(lines: string[], shared?: boolean): string {
  mkdirSync(join(dir.path, 'lists'), {recursive: true})
  writeFileSync(join(dir.path, 'lists', 'banned.txt'), lines.join('\n') + '\n')
  const file = join(dir.path, 'policy.yaml')
  writeFileSync(file, `hash_lists:\n  banned:\n    file: lists/banned.txt\n${shared === undefined ? '' : `    shared: ${shared}\n`}`)
  return file
}

test.before(async () => {
  const listed = readFileSync(join(PHOTOS, 'astronaut.jpg'))
  hash = (await hashImage(listed, DEFAULT_LIMITS))[0].hash
  mkdirSync(folder)
  writeFileSync(join(folder, 'a-listed.jpg'), listed)
  const copy = await sharp(listed).resize(256).jpeg({quality: 70}).toBuffer()
  writeFileSync(join(folder, 'b-copy.jpg'), copy)
  writeFileSync(join(folder, 'c-other.jpg'), readFileSync(join(PHOTOS, 'coffee.jpg')))
  distance = hammingDistance(hashFromHex(hash), hashFromHex((await hashImage(copy, DEFAULT_LIMITS))[0].hash))
})

test.after(() => dir.remove())

test('mod scan applies the lists: matches in --ndjson and in the table rows', async () => {
  const policy = writePolicy([`${hash},case-1041,removed after report`])
  const r = await runInProcess(['scan', folder, '--config', policy, '--ndjson'], {env})
  const results = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(
    results.map((x) => [x.source.split('/').pop(), x.matches ?? null, x.violations.some((v: {name: string}) => v.name === 'known_bad')]),
    [
      ['a-listed.jpg', [{list: 'banned', label: 'case-1041', note: 'removed after report', distance: 0, category: 'known_bad'}], true],
      ['b-copy.jpg', [{list: 'banned', label: 'case-1041', note: 'removed after report', distance, category: 'known_bad'}], true],
      ['c-other.jpg', null, false],
    ],
  )
  const table = await runInProcess(['scan', join(folder, 'a-listed.jpg'), '--config', policy], {env})
  assert.match(table.stdout, `known_bad 1.00>=0.5 (list banned: "case-1041", distance 0)`)
  assert.is(table.code, 1)
})

test('processes started together on a new list marked shared all match, and leave one cache folder under MOD_CACHE_DIR and nothing half-written', async () => {
  // Enough lines that the builds overlap in time.
  const filler = Array.from({length: 20_000}, (_, i) => `${(i * 2654435761 >>> 0).toString(16).padStart(8, '0').repeat(8)},filler`)
  const policy = writePolicy([...filler, `${hash},case-1041`], true)
  const cache = join(dir.path, 'shared-cache')
  const runs = await Promise.all([1, 2, 3].map(() => runCli(['scan', join(folder, 'a-listed.jpg'), '--config', policy, '--json'], {env: {...env, MOD_CACHE_DIR: cache}})))
  for (const r of runs) {
    assert.is(r.code, 1, r.stderr)
    assert.equal(JSON.parse(r.stdout)[0].matches, [{list: 'banned', label: 'case-1041', note: '', distance: 0, category: 'known_bad'}])
  }
  const names = readdirSync(join(cache, 'hash-lists'))
  assert.is(names.filter((n) => /^[0-9a-f]{64}-v\d+$/.test(n)).length, 1, names.join(' '))
  assert.is(names.filter((n) => n.includes('tmp')).length, 0, names.join(' '))
})

test('a small list not marked shared is held by the process: nothing is written under MOD_CACHE_DIR/hash-lists', async () => {
  const policy = writePolicy([`${hash},case-1041`])
  const cache = join(dir.path, 'own-cache')
  const r = await runInProcess(['scan', join(folder, 'a-listed.jpg'), '--config', policy, '--json'], {env: {...env, MOD_CACHE_DIR: cache}})
  assert.is(r.code, 1, r.stderr)
  assert.equal(JSON.parse(r.stdout)[0].matches, [{list: 'banned', label: 'case-1041', note: '', distance: 0, category: 'known_bad'}])
  assert.not.ok(existsSync(join(cache, 'hash-lists')))
})

test('mod scan stops on a bad list line with invalid_config, naming the file and the line', async () => {
  const policy = writePolicy(['# list', `${hash},ok`, 'zz,broken'])
  const r = await runInProcess(['scan', folder, '--config', policy], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, `hash list ${join(dir.path, 'lists', 'banned.txt')}: line 3:`)
})

test('a list saved by Windows tools: a UTF-8 byte order mark and CRLF line ends are read; UTF-16 text, with its mark or without, is named as such', async () => {
  const policy = writePolicy([])
  const list = join(dir.path, 'lists', 'banned.txt')
  writeFileSync(list, `\uFEFF${hash},case-1041\r\n`)
  const r = await runInProcess(['scan', join(folder, 'a-listed.jpg'), '--config', policy, '--only', 'pdq'], {env})
  assert.match(r.stdout, `known_bad 1.00>=0.5 (list banned: "case-1041", distance 0)`)
  assert.is(r.code, 1)
  writeFileSync(list, Buffer.from(`\uFEFF${hash},case-1041\r\n`, 'utf16le'))
  const utf16 = await runInProcess(['scan', join(folder, 'a-listed.jpg'), '--config', policy, '--only', 'pdq'], {env})
  assert.is(utf16.code, 2)
  assert.is(utf16.stderr.trim(), `mod: invalid_config: hash list ${list}: line 1: the file is UTF-16 text (it starts with a UTF-16 byte order mark): save the list as UTF-8`)
  // Without the mark, as some tools write it: named too, not every line reported as no hash.
  writeFileSync(list, Buffer.from(`${hash},case-1041\r\n${hash},case-1042\r\n`, 'utf16le'))
  const bare = await runInProcess(['scan', join(folder, 'a-listed.jpg'), '--config', policy, '--only', 'pdq'], {env})
  assert.is(bare.code, 2)
  assert.is(bare.stderr.trim(), `mod: invalid_config: hash list ${list}: line 1: the file is UTF-16 text without a byte order mark (a NUL byte beside every letter): save the list as UTF-8`)
})

test('a list that points at a file of secrets: the scan names its lines, never their content', async () => {
  const policy = writePolicy(['DB_PASSWORD=hunter2', 'AWS_SECRET=wJalrXUtnFEMI'])
  const r = await runInProcess(['scan', folder, '--config', policy], {env})
  assert.is(r.code, 2)
  assert.is(
    r.stderr.trim(),
    `mod: invalid_config: hash list ${join(dir.path, 'lists', 'banned.txt')}: line 1: not a PDQ hash: 19 characters where 64 hexadecimal digits are expected; line 2: not a PDQ hash: 24 characters where 64 hexadecimal digits are expected`,
  )
})

test('mod policy validate names every problem of a list in one round: a bad distance and a missing file; a file two lists name once; a file of 30 bad lines by 20 and a count', async () => {
  const folder = join(dir.path, 'validate')
  mkdirSync(join(folder, 'lists'), {recursive: true})
  writeFileSync(join(folder, 'lists', 'bad.txt'), Array.from({length: 30}, (_, i) => `bad line ${i + 1}`).join('\n') + '\n')
  writeFileSync(join(folder, 'p.yaml'), 'hash_lists:\n  gone: {file: lists/nope.txt, distance: 50}\n  one: {file: lists/bad.txt}\n  two: {file: lists/bad.txt}\n')
  const r = await runInProcess(['policy', 'validate', 'p.yaml'], {env, cwd: folder})
  assert.is(r.code, 2)
  const lines = r.stderr.trim().split('\n')
  assert.is(lines[0], 'p.yaml:2:42: hash_lists.gone.distance must be a whole number from 0 to 43, not 50')
  assert.match(lines[1], /^p\.yaml:2: hash_lists\.gone: hash list .*nope\.txt does not exist$/)
  const bad = lines.filter((l) => l.includes('bad.txt:'))
  assert.equal(bad.map((l) => Number(/bad\.txt:(\d+):/.exec(l)?.[1])), Array.from({length: 20}, (_, i) => i + 1))
  assert.match(lines[lines.length - 1], /^p\.yaml:3: hash_lists\.one: 10 more bad lines in .*bad\.txt \(the first 20 are listed\)$/)
  assert.is(lines.length, 23)
})

test.run()
