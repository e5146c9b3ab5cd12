// Names from elsewhere (files, a policy's keys, what was typed) never reach a terminal raw: not a colour that
// outlives the program, not a window title, not a line break that forges a row, not a character that does not show.
import {writeFileSync, mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {visible} from '../../src/cli/visible.js'
import {runCli, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-escapes-')
test.after(() => dir.remove())
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}

/** Each name in the folder, and how a table shows it. */
const NAMES: [string, string][] = [
  ['plain.png', 'plain.png'],
  ['red\x1b[31mRED.png', 'red\\x1b[31mRED.png'],
  ['title\x1b]0;PWNED\x07.png', 'title\\x1b]0;PWNED\\x07.png'],
  ['row\nSAFE    forged.png', 'row\\x0aSAFE    forged.png'],
  ['zero\u200bwidth.png', 'zero\\u200bwidth.png'],
  ['\ufeffplain.png', '\\ufeffplain.png'],
]

test.before(async () => {
  mkdirSync(join(dir.path, 'odd'))
  writeRednessPolicy(dir.path)
  const png = await solidPng(0, 0, 255, 16, 16)
  for (const [name] of NAMES) writeFileSync(join(dir.path, 'odd', name), png)
})

const RAW = /[\x00-\x09\x0b-\x1f\x7f\u200b\ufeff]/

test('scan and hash tables show every name on its own row, escaped, with nothing raw for the terminal to obey', async () => {
  for (const args of [['scan', 'odd', '--config', 'policy.yaml'], ['hash', 'odd']]) {
    const r = await runCli(args, {cwd: dir.path, env: {...env, FORCE_COLOR: '1'}})
    assert.is(r.code, 0, r.stderr)
    const rows = r.stdout.trimEnd().split('\n')
    assert.is(rows.length, NAMES.length, r.stdout)
    // The row's own colour (the SAFE word) is the one escape sequence left.
    const shown = rows.map((row) => row.replace(/\x1b\[\d+m/g, ''))
    for (const row of shown) assert.not.match(row, RAW)
    for (const [, escaped] of NAMES) assert.ok(shown.some((row) => row.includes(`odd/${escaped}`)), `${escaped} in ${shown.join('\n')}`)
  }
})

test('a name holding a byte order mark keeps it: two files are two sources', async () => {
  const r = await runCli(['scan', 'odd', '--json', '--config', 'policy.yaml'], {cwd: dir.path, env})
  const sources = (JSON.parse(r.stdout) as {source: string}[]).map((x) => x.source).sort()
  assert.equal(sources, NAMES.map(([name]) => `odd/${name}`).sort())
})

test("a policy's keys and a mistyped command are quoted with their escapes, one problem a line", async () => {
  writeFileSync(join(dir.path, 'bad.yaml'), 'categories:\n  "evil\\e[31mred\\e]0;T\\a":\n    prompts: ["x"]\n  "bad\\nname":\n    prompts: ["y"]\n')
  const policy = await runCli(['policy', 'validate', 'bad.yaml'], {cwd: dir.path, env})
  assert.is(policy.code, 2)
  assert.equal(policy.stderr.trimEnd().split('\n'), [
    'bad.yaml:2:3: category name "evil\\u001b[31mred\\u001b]0;T\\u0007" may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long',
    'bad.yaml:4:3: category name "bad\\nname" may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long',
  ])
  const typed = await runCli(['x\x1b]0;PWN\x07\r'], {cwd: dir.path, env})
  assert.is(typed.code, 2)
  assert.is(typed.stderr, 'mod: usage: x\\x1b]0;PWN\\x07\\x0d is not a mod command (`mod help` lists them)\n')
})

test('visible escapes every control and invisible formatting character, astral ones included', () => {
  assert.is(visible('a\u00adb\u2060c\u2028d\u{e0041}e'), 'a\\xadb\\u2060c\\u2028d\\u{e0041}e')
  assert.is(visible('caf\u00e9 \u4e2d\u6587 \u{1f600}'), 'caf\u00e9 \u4e2d\u6587 \u{1f600}')
  // A joiner that changes what is drawn is kept: an emoji family, a flag, a Persian word's parted letters, a Hindi
  // half form. Between Latin letters, at an end or doubled, it changes nothing on screen and is escaped.
  for (const shown of ['\u{1f468}\u200d\u{1f469}\u200d\u{1f467}.jpg', '\u{1f3f3}\ufe0f\u200d\u{1f308}', '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', '\u0915\u094d\u200d\u0937']) {
    assert.is(visible(shown), shown)
  }
  assert.is(visible('pay\u200dpal \u200c\u{1f469} \u{1f469}\u200d \u{1f469}\u200d\u200d\u{1f469}'), 'pay\\u200dpal \\u200c\u{1f469} \u{1f469}\\u200d \u{1f469}\\u200d\\u200d\u{1f469}')
})

test.run()
