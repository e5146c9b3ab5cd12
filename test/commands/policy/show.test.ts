import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse} from 'yaml'

import {runInProcess, tempDir} from '../../helpers/cli.js'

const dir = tempDir()

test.after(() => dir.remove())

test('text rules are shown with their word lists written out, and the output validates', async () => {
  mkdirSync(join(dir.path, 'lists'))
  writeFileSync(join(dir.path, 'lists', 'spam.txt'), '# spam\nfree money\ncheap pills\n')
  const policy = join(dir.path, 'policy.yaml')
  writeFileSync(
    policy,
    'text:\n  rules:\n    contacts: {category: contact_info, detect: [email, handle]}\n    spam: {category: drugs, words: [buy now], words_file: lists/spam.txt}\n    ids: {category: drugs, regex: "x\\\\d+"}\n',
  )
  const show = await runInProcess(['policy', 'show', '--config', policy])
  assert.is(show.code, 0, show.stderr)
  assert.equal((parse(show.stdout) as {text: unknown}).text, {
    video: false,
    rules: {
      contacts: {category: 'contact_info', detect: ['email', 'handle']},
      spam: {category: 'drugs', words: ['buy now', 'free money', 'cheap pills']},
      ids: {category: 'drugs', regex: ['x\\d+']},
    },
  })
  const effective = join(dir.path, 'effective.yaml')
  writeFileSync(effective, show.stdout)
  const valid = await runInProcess(['policy', 'validate', effective])
  assert.is(valid.code, 0, valid.stderr)
  assert.match(valid.stdout, '  text rules:   contacts, spam, ids\n')
})

test('hash lists are shown with their files as absolute paths, and the output validates with them', async () => {
  mkdirSync(join(dir.path, 'hashes'))
  writeFileSync(join(dir.path, 'hashes', 'removals.txt'), `${'ab'.repeat(32)},case-1\n`)
  const policy = join(dir.path, 'lists.yaml')
  writeFileSync(policy, 'hash_lists:\n  removals: {file: hashes/removals.txt}\n  shared: {file: hashes/removals.txt, category: weapons, distance: 20, shared: true}\n')
  const show = await runInProcess(['policy', 'show', '--config', policy])
  assert.is(show.code, 0, show.stderr)
  const file = join(dir.path, 'hashes', 'removals.txt')
  assert.equal((parse(show.stdout) as {hash_lists: unknown}).hash_lists, {
    removals: {file, category: 'known_bad', distance: 31},
    shared: {file, category: 'weapons', distance: 20, shared: true},
  })
  mkdirSync(join(dir.path, 'elsewhere'))
  const effective = join(dir.path, 'elsewhere', 'effective.yaml')
  writeFileSync(effective, show.stdout)
  const valid = await runInProcess(['policy', 'validate', effective])
  assert.is(valid.code, 0, valid.stderr)
  assert.match(valid.stdout, `  hash list:    removals: 1 hash in ${file}\n  hash list:    shared: 1 hash in ${file}\n`)
})

test('hash lists are shown with their files as absolute paths, category and distance, and the output validates', async () => {
  const folder = join(dir.path, 'hashes')
  mkdirSync(join(folder, 'lists'), {recursive: true})
  writeFileSync(join(folder, 'lists', 'removals.txt'), `${'ab'.repeat(32)},case-1\n`)
  writeFileSync(join(folder, 'lists', 'shared.txt'), `${'0f'.repeat(32)}\n`)
  const policy = join(folder, 'policy.yaml')
  writeFileSync(policy, 'hash_lists:\n  removals:\n    file: lists/removals.txt\n  shared:\n    file: lists/shared.txt\n    category: weapons\n    distance: 20\n')
  const show = await runInProcess(['policy', 'show', '--config', policy])
  assert.is(show.code, 0, show.stderr)
  assert.equal((parse(show.stdout) as {hash_lists: unknown}).hash_lists, {
    removals: {file: join(folder, 'lists', 'removals.txt'), category: 'known_bad', distance: 31},
    shared: {file: join(folder, 'lists', 'shared.txt'), category: 'weapons', distance: 20},
  })
  const effective = join(dir.path, 'effective-hashes.yaml')
  writeFileSync(effective, show.stdout)
  const valid = await runInProcess(['policy', 'validate', effective, '--json'])
  assert.is(valid.code, 0, valid.stderr)
  const body = JSON.parse(valid.stdout) as {hash_lists: {name: string; entries: number}[]}
  assert.equal(body.hash_lists.map((l) => [l.name, l.entries]), [['removals', 1], ['shared', 1]])
})

test('without hash lists or text rules the output has neither section', async () => {
  const show = await runInProcess(['policy', 'show'], {cwd: dir.path})
  assert.is(show.code, 0, show.stderr)
  const shown = parse(show.stdout) as Record<string, unknown>
  assert.equal(['hash_lists' in shown, 'text' in shown], [false, false])
})

test('a prompt holding characters a terminal acts on or hides (U+202E, a zero-width space, an escape) is shown escaped, and reads back the same', async () => {
  const prompt = 'a \u202egnp.exe photo\u200b with \x1b[31m'
  const policy = join(dir.path, 'hidden.yaml')
  writeFileSync(policy, `categories:\n  odd:\n    prompts: [${JSON.stringify(prompt)}]\n    threshold: 0.5\n`)
  const show = await runInProcess(['policy', 'show', '--config', policy])
  assert.is(show.code, 0, show.stderr)
  assert.not.match(show.stdout, /[\u202e\u200b\x1b]/)
  assert.match(show.stdout, '"a \\u202Egnp.exe photo\\u200B with \\e[31m"')
  const odd = (parse(show.stdout) as {categories: Record<string, {prompts: string[]}>}).categories.odd
  assert.equal(odd.prompts, [prompt])
})

test.run()
