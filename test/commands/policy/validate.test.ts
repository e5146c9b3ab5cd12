import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, runInProcess, tempDir} from '../../helpers/cli.js'

const dir = tempDir()
const good = join(dir.path, 'good.yaml')
const bad = join(dir.path, 'bad.yaml')

test.before(() => {
  writeFileSync(good, 'preset: fast\ncategories:\n  redness:\n    prompts: ["red"]\n  weapons:\n    threshold: 0.6\n  tobacco:\n    enabled: false\n')
  writeFileSync(bad, 'preset: fastest\ncategories:\n  weapons:\n    threshold: 1.5\n  redness:\n    parent: nothing\n')
})

test.after(() => dir.remove())

test('a valid file: exit 0 and a summary', async () => {
  const r = await runInProcess(['policy', 'validate', good])
  assert.is(r.code, 0, r.stderr)
  assert.is(
    r.stdout,
    [
      `${good}: valid`,
      '  categories:   11',
      '  custom:       redness',
      '  changed:      weapons',
      '  disabled:     tobacco',
      '  preset:       fast',
      '  trim_borders: true',
      '  text rules:   none',
      '',
    ].join('\n'),
  )
})

test('an invalid file: exit 2 and one file:line:col: message line per problem on stderr', async () => {
  const r = await runInProcess(['policy', 'validate', bad])
  assert.is(r.code, 2)
  assert.is(r.stdout, '')
  assert.is(
    r.stderr,
    [
      `${bad}:1:9: preset must be one of fast, balanced, accurate, not "fastest"`,
      `${bad}:4:16: categories.weapons.threshold must be a number from 0 to 1, not 1.5`,
      `${bad}:5:3: new category "redness" needs prompts: a list of at least one prompt`,
      `${bad}:6:13: categories.redness.parent: no category is named "nothing"`,
      '',
    ].join('\n'),
  )
})

test('text rules are checked: a bad regular expression on its line, a missing word list on the line naming it', async () => {
  const file = join(dir.path, 'text.yaml')
  writeFileSync(join(dir.path, 'spam.txt'), '# spam words\nfree money\n\ncheap pills\n')
  writeFileSync(
    file,
    'text:\n  rules:\n    contacts:\n      category: contact_info\n      detect: [email, phone]\n    spam:\n      category: spam_text\n      words_file: spam.txt\n    wallets:\n      category: contact_info\n      regex: ["bc1(", "ok"]\n    slurs:\n      category: hate_symbols\n      words_file: lists/slurs.txt\ncategories:\n  spam_text:\n    prompts: [an advertisement]\n',
  )
  const ko = await runInProcess(['policy', 'validate', file])
  assert.is(ko.code, 2)
  assert.is(
    ko.stderr,
    `${file}:11:15: text.rules.wallets.regex[0] is not a valid regular expression (RE2 syntax): missing closing ): \`bc1(\`\n` +
      `${file}:14:19: text.rules.slurs.words_file: cannot read the word list ${join(dir.path, 'lists/slurs.txt')}: no such file\n`,
  )
  writeFileSync(file, (await import('node:fs')).readFileSync(file, 'utf8').replace('"bc1(", ', ''))
  const missing = await runInProcess(['policy', 'validate', file])
  assert.is(missing.code, 2)
  assert.is(missing.stderr, `${file}:14:19: text.rules.slurs.words_file: cannot read the word list ${join(dir.path, 'lists/slurs.txt')}: no such file\n`)
  writeFileSync(file, (await import('node:fs')).readFileSync(file, 'utf8').replace('lists/slurs.txt', 'spam.txt'))
  const ok = await runInProcess(['policy', 'validate', file])
  assert.is(ok.code, 0, ok.stderr)
  assert.match(ok.stdout, '  text rules:   contacts, spam, wallets, slurs\n')
})

test('a word, inline or in a list file, that holds no letter or digit could never match: a problem naming it', async () => {
  writeFileSync(join(dir.path, 'symbols.txt'), '# symbols\nfree money\n\n€€€\n')
  const file = join(dir.path, 'symbols.yaml')
  writeFileSync(file, 'text:\n  rules:\n    spam:\n      category: contact_info\n      words_file: symbols.txt\n')
  const listed = await runInProcess(['policy', 'validate', file])
  assert.is(listed.code, 2)
  assert.is(listed.stderr, `${file}:5:19: text.rules.spam.words_file symbols.txt: line 4, "€€€", holds no letter or digit, so it could never match a word read\n`)
  writeFileSync(file, 'text:\n  rules:\n    spam:\n      category: contact_info\n      words: [free, "..."]\n')
  const inline = await runInProcess(['policy', 'validate', file])
  assert.is(inline.code, 2)
  assert.is(inline.stderr, `${file}:5:21: text.rules.spam.words[1] "..." holds no letter or digit, so it could never match a word read\n`)
})

test('text.budget is a whole number of recogniser columns in range, else a problem on its line', async () => {
  const file = join(dir.path, 'budget.yaml')
  const rules = '  rules:\n    contacts:\n      category: contact_info\n      detect: [email]\n'
  writeFileSync(file, `text:\n  budget: 500\n${rules}`)
  const low = await runInProcess(['policy', 'validate', file])
  assert.is(low.code, 2)
  assert.is(low.stderr, `${file}:2:11: text.budget must be a whole number of recogniser columns from 1280 to 256000, not 500\n`)
  writeFileSync(file, `text:\n  budget: lots\n${rules}`)
  assert.is((await runInProcess(['policy', 'validate', file])).stderr, `${file}:2:11: text.budget must be a whole number of recogniser columns from 1280 to 256000, not "lots"\n`)
  writeFileSync(file, `text:\n  budget: 65536\n${rules}`)
  const ok = await runInProcess(['policy', 'validate', file])
  assert.is(ok.code, 0, ok.stderr)
  const shown = await runInProcess(['policy', 'show', '--config', file])
  assert.match(shown.stdout, /^text:\n  video: false\n  budget: 65536\n/m)
})

test('a policy that disables every category is not valid: no scan could use it, and validate says so first', async () => {
  const none = join(dir.path, 'none.yaml')
  const names = ['nudity', 'sexual_activity', 'suggestive', 'violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco']
  writeFileSync(none, `categories:\n${names.map((n) => `  ${n}: {enabled: false}\n`).join('')}`)
  const r = await runInProcess(['policy', 'validate', none])
  assert.is(r.code, 2)
  assert.is(r.stderr, `${none}:1:1: every category is disabled: a policy must leave at least one to check\n`)
})

test('--json for a file that cannot be read still prints one result, its problem at line 0, beside the error line and exit 2', async () => {
  const missing = join(dir.path, 'missing.yaml')
  const r = await runInProcess(['policy', 'validate', missing, '--json'])
  assert.is(r.code, 2)
  assert.equal(JSON.parse(r.stdout), {valid: false, problems: [{line: 0, column: 0, message: `cannot read the policy file ${missing}: no such file`}], summary: null})
  assert.is(r.stderr, `mod: invalid_config: cannot read the policy file ${missing}: no such file\n`)
})

test('--json prints {valid, problems, summary}', async () => {
  const ok = await runInProcess(['policy', 'validate', good, '--json'])
  assert.is(ok.code, 0)
  assert.equal(JSON.parse(ok.stdout), {
    valid: true,
    problems: [],
    summary: {categories: 11, custom: ['redness'], disabled: ['tobacco'], changed: ['weapons'], preset: 'fast', trim_borders: true, text_rules: []},
  })
  const ko = await runInProcess(['policy', 'validate', bad, '--json'])
  assert.is(ko.code, 2)
  const body = JSON.parse(ko.stdout)
  assert.is(body.valid, false)
  assert.is(body.summary, null)
  assert.equal(body.problems[0], {line: 1, column: 9, message: 'preset must be one of fast, balanced, accurate, not "fastest"'})
  assert.is(body.problems.length, 4)
})

test('a prompt longer than the 77-token context: a warning naming it on stderr, exit still 0', async () => {
  const long = join(dir.path, 'long.yaml')
  const word = 'w'.repeat(1_000_000)
  writeFileSync(long, `categories:\n  redness:\n    prompts: ["red", "${'cat '.repeat(76)}"]\n    negatives: ["${word}"]\n  fit:\n    prompts: ["${'cat '.repeat(75)}"]\nneutral: ["a photo", "${'dog '.repeat(80)}"]\n`)
  const r = await runInProcess(['policy', 'validate', long])
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, `${long}: valid`)
  assert.equal(r.stderr.trim().split('\n'), [
    `${long}: warning: prompt "${'cat '.repeat(15)}…" of category redness is longer than 77 tokens and will be truncated`,
    `${long}: warning: negative "${'w'.repeat(60)}…" of category redness is longer than 77 tokens and will be truncated`,
    `${long}: warning: neutral prompt "${'dog '.repeat(15)}…" is longer than 77 tokens and will be truncated`,
  ])
})

test('hash lists are read relative to the policy file: entries in the summary, bad lines with their numbers', async () => {
  const hash = 'ab'.repeat(32)
  writeFileSync(join(dir.path, 'removals.txt'), `# removals\n${hash},case-1\n${hash},case-2,note\n`)
  writeFileSync(join(dir.path, 'broken.txt'), `${hash}\n\nzz,case-3\n${hash}x\n`)
  const withLists = join(dir.path, 'lists.yaml')
  writeFileSync(withLists, 'hash_lists:\n  removals:\n    file: removals.txt\n    distance: 20\n')
  const r = await runInProcess(['policy', 'validate', withLists])
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, `  hash list:    removals: 2 hashes in ${join(dir.path, 'removals.txt')}\n`)
  const broken = join(dir.path, 'broken.yaml')
  writeFileSync(broken, 'hash_lists:\n  removals:\n    file: removals.txt\n  shared:\n    file: broken.txt\n    category: weapons\n  gone:\n    file: none.txt\n')
  const b = await runInProcess(['policy', 'validate', broken, '--json'])
  assert.is(b.code, 2)
  const body = JSON.parse(b.stdout)
  assert.is(body.valid, false)
  assert.equal(
    body.hash_lists.map((l: {name: string; entries: number; problems: unknown[]}) => [l.name, l.entries, l.problems]),
    [
      ['removals', 2, []],
      [
        'shared',
        1,
        [
          {line: 3, message: 'not a PDQ hash: 2 characters where 64 hexadecimal digits are expected'},
          {line: 4, message: 'not a PDQ hash: 65 characters where 64 hexadecimal digits are expected'},
        ],
      ],
      ['gone', 0, [{line: 0, message: `hash list ${join(dir.path, 'none.txt')} does not exist`}]],
    ],
  )
  const t = await runInProcess(['policy', 'validate', broken])
  assert.is(t.code, 2)
  assert.is(t.stdout, '')
  assert.is(
    t.stderr,
    [
      `${join(dir.path, 'broken.txt')}:3: not a PDQ hash: 2 characters where 64 hexadecimal digits are expected`,
      `${join(dir.path, 'broken.txt')}:4: not a PDQ hash: 65 characters where 64 hexadecimal digits are expected`,
      `${broken}:8: hash_lists.gone: hash list ${join(dir.path, 'none.txt')} does not exist`,
      '',
    ].join('\n'),
  )
})

test('one hash is "1 hash"; a folder named as a list is "not a regular file", on the line of its file:', async () => {
  writeFileSync(join(dir.path, 'one.txt'), `${'cd'.repeat(32)},case-9\n`)
  const policy = join(dir.path, 'one.yaml')
  writeFileSync(policy, 'hash_lists:\n  one: {file: one.txt}\n')
  const r = await runInProcess(['policy', 'validate', policy])
  assert.match(r.stdout, `  hash list:    one: 1 hash in ${join(dir.path, 'one.txt')}\n`)
  writeFileSync(policy, 'hash_lists:\n  one: {file: one.txt}\n  folder:\n    file: .\n')
  const f = await runInProcess(['policy', 'validate', policy])
  assert.is(f.code, 2)
  assert.is(f.stderr, `${policy}:4: hash_lists.folder: hash list ${dir.path} is not a regular file\n`)
})

test('every problem in one round: the policy\'s own, a missing word list, a bad hash-list line and a missing list file', async () => {
  const hash = 'ef'.repeat(32)
  writeFileSync(join(dir.path, 'round.txt'), `${hash},ok\nnot-a-hash\n`)
  const policy = join(dir.path, 'round.yaml')
  writeFileSync(
    policy,
    'categories:\n  weapons:\n    threshold: 1.5\ntext:\n  rules:\n    banned:\n      category: hate_symbols\n      words_file: missing-words.txt\nhash_lists:\n  round:\n    file: round.txt\n  gone:\n    file: missing-list.txt\n',
  )
  const r = await runInProcess(['policy', 'validate', policy])
  assert.is(r.code, 2)
  assert.is(r.stdout, '')
  assert.equal(r.stderr.trim().split('\n'), [
    `${policy}:3:16: categories.weapons.threshold must be a number from 0 to 1, not 1.5`,
    `${policy}:8:19: text.rules.banned.words_file: cannot read the word list ${join(dir.path, 'missing-words.txt')}: no such file`,
    `${join(dir.path, 'round.txt')}:2: not a PDQ hash: 10 characters where 64 hexadecimal digits are expected`,
    `${policy}:13: hash_lists.gone: hash list ${join(dir.path, 'missing-list.txt')} does not exist`,
  ])
})

test('- reads the policy from stdin, named "stdin" in the output; the files it names are read from the working folder', async () => {
  const ok = await runCli(['policy', 'validate', '-'], {stdin: readFileSync(good)})
  assert.is(ok.code, 0, ok.stderr)
  assert.match(ok.stdout, /^stdin: valid\n  categories:   11\n/)
  const wrong = await runCli(['policy', 'validate', '-', '--json'], {stdin: readFileSync(bad)})
  assert.is(wrong.code, 2)
  assert.is(JSON.parse(wrong.stdout).valid, false)
  assert.match(wrong.stderr, /^stdin:1:9: preset must be one of fast, balanced, accurate, not "fastest"\n/)
  writeFileSync(join(dir.path, 'stdin-list.txt'), `${'cd'.repeat(32)},case-9\n`)
  const lists = await runCli(['policy', 'validate', '-'], {stdin: Buffer.from('hash_lists:\n  removals:\n    file: stdin-list.txt\n'), cwd: dir.path})
  assert.is(lists.code, 0, lists.stderr)
  assert.match(lists.stdout, `  hash list:    removals: 1 hash in ${join(dir.path, 'stdin-list.txt')}\n`)
  const large = await runCli(['policy', 'validate', '-'], {stdin: Buffer.alloc(1024 * 1024 + 1, 0x20)})
  assert.equal([large.code, large.stderr], [2, 'mod: invalid_config: the policy file on stdin is larger than 1 MiB\n'])
})

test('a missing file: exit 2 and an invalid_config message', async () => {
  const r = await runInProcess(['policy', 'validate', join(dir.path, 'nope.yaml')])
  assert.is(r.code, 2)
  assert.is(r.stderr.trim(), `mod: invalid_config: cannot read the policy file ${join(dir.path, 'nope.yaml')}: no such file`)
})

test.run()
