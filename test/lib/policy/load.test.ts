import {execFileSync} from 'node:child_process'
import {chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, loadPolicyFile, summarizePolicy, validatePolicyText} from '../../../src/lib/config/policy.js'
import {loadConfig} from '../../../src/lib/config/load.js'
import {isModError} from '../../../src/lib/errors.js'
import {DEFAULT_CATEGORIES, DEFAULT_NEUTRAL} from '../../../src/lib/policy/defaults.js'
import {findPolicyFile, formatProblems, MAX_POLICY_BYTES} from '../../../src/lib/policy/load.js'
import type {Policy} from '../../../src/lib/policy/types.js'

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mod-policy-')))
test.after(() => rmSync(dir, {recursive: true, force: true}))

function policyOf(text: string): Policy {
  const {problems, file} = validatePolicyText(text)
  assert.equal(problems, [])
  return buildPolicy(file)
}

const find = (p: Policy, name: string) => p.categories.find((c) => c.name === name)

test('no file gives the 11 built-ins, the default neutral prompts, trim_borders on and no preset', () => {
  const p = buildPolicy()
  assert.equal(
    p.categories.map((c) => c.name),
    DEFAULT_CATEGORIES.map((c) => c.name),
  )
  assert.equal(p.neutral, [...DEFAULT_NEUTRAL])
  assert.is(p.trim_borders, true)
  assert.is(p.preset, undefined)
  assert.not.ok('preset' in p)
  assert.equal(find(p, 'weapons'), {...DEFAULT_CATEGORIES[5], prompts: [...DEFAULT_CATEGORIES[5].prompts], negatives: [...DEFAULT_CATEGORIES[5].negatives], calibration: {scale: 0.5, bias: -3}})
})

test('a new name adds a custom category after the built-ins, with defaults for what is not given', () => {
  const p = policyOf('categories:\n  redness:\n    prompts: ["red"]\n  blueness:\n    prompts: [blue]\n    negatives: [sky]\n    parent: redness\n    threshold: 0.8\n')
  assert.equal(p.categories.slice(11), [
    {name: 'redness', parent: null, threshold: 0.5, prompts: ['red'], negatives: [], calibration: {scale: 1, bias: 0}, origin: 'custom', signals: {clip: 1}},
    {name: 'blueness', parent: 'redness', threshold: 0.8, prompts: ['blue'], negatives: ['sky'], calibration: {scale: 1, bias: 0}, origin: 'custom', signals: {clip: 1}},
  ])
})

test('a built-in name changes only the fields given', () => {
  const p = policyOf('categories:\n  weapons:\n    threshold: 0.6\n  gore:\n    prompts: [a photo of gore]\n    calibration: {bias: -2}\n')
  const weapons = find(p, 'weapons')
  assert.is(weapons?.threshold, 0.6)
  assert.equal(weapons?.prompts, DEFAULT_CATEGORIES[5].prompts)
  assert.is(weapons?.parent, 'violence')
  assert.is(weapons?.origin, 'builtin')
  const gore = find(p, 'gore')
  assert.equal(gore?.prompts, ['a photo of gore'])
  assert.equal(gore?.negatives, DEFAULT_CATEGORIES[4].negatives)
  assert.equal(gore?.calibration, {scale: 0.5, bias: -2})
  assert.is(gore?.threshold, 0.5)
})

test('enabled: false removes a category; its built-in children lose the parent', () => {
  const p = policyOf('categories:\n  tobacco:\n    enabled: false\n  violence:\n    enabled: false\n')
  assert.is(p.categories.length, 9)
  assert.is(find(p, 'tobacco'), undefined)
  assert.is(find(p, 'violence'), undefined)
  assert.equal(['weapons', 'gore', 'self_harm'].map((n) => find(p, n)?.parent), [null, null, null])
  assert.is(find(p, 'sexual_activity')?.parent, 'nudity')
})

test('a disabled custom category is not in the policy', () => {
  const p = policyOf('categories:\n  redness:\n    prompts: [red]\n    enabled: false\n')
  assert.is(p.categories.length, 11)
})

test('parent: null detaches a built-in child', () => {
  assert.is(find(policyOf('categories:\n  weapons:\n    parent: null\n'), 'weapons')?.parent, null)
})

test('preset, trim_borders and neutral come from the file', () => {
  const p = policyOf('preset: accurate\ntrim_borders: false\nneutral: [a photo]\n')
  assert.is(p.preset, 'accurate')
  assert.is(p.trim_borders, false)
  assert.equal(p.neutral, ['a photo'])
})

test('building a policy never changes the defaults', () => {
  const p = policyOf('categories:\n  weapons:\n    threshold: 0.9\n')
  find(p, 'weapons')?.prompts.push('x')
  assert.is(DEFAULT_CATEGORIES[5].threshold, 0.5)
  assert.not.ok(DEFAULT_CATEGORIES[5].prompts.includes('x'))
})

test('loadPolicyFile reads, validates and merges a file', async () => {
  const path = join(dir, 'ok.yaml')
  writeFileSync(path, 'preset: fast\ncategories:\n  redness:\n    prompts: ["red"]\n')
  const {policy, file} = await loadPolicyFile(path)
  assert.is(policy.preset, 'fast')
  assert.is(policy.categories.length, 12)
  assert.equal(file.categories, [{name: 'redness', prompts: ['red']}])
})

test('an invalid file is an invalid_config error listing every problem as path:line:col: message', async () => {
  const path = join(dir, 'bad.yaml')
  writeFileSync(path, 'preset: huge\ncategories:\n  weapons:\n    threshold: 2\n')
  try {
    await loadPolicyFile(path)
    assert.unreachable()
  } catch (e) {
    assert.ok(isModError(e))
    assert.is(e.code, 'invalid_config')
    assert.is(
      e.message,
      [
        `invalid policy file ${path}:`,
        `${path}:1:9: preset must be one of fast, balanced, accurate, not "huge"`,
        `${path}:4:16: categories.weapons.threshold must be a number from 0 to 1, not 2`,
      ].join('\n'),
    )
  }
})

test('a missing, oversized or not UTF-8 policy file (UTF-16 with or without its byte order mark, Latin-1, a NUL byte) is an invalid_config error saying which', async () => {
  const big = join(dir, 'big.yaml')
  writeFileSync(big, `# ${'x'.repeat(MAX_POLICY_BYTES)}\n`)
  // Saved by Windows PowerShell 5's > (UTF-16 with its byte order mark), and by an editor in Latin-1.
  const utf16 = join(dir, 'utf16.yaml')
  writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('preset: fast\n', 'utf16le')]))
  // Saved as UTF-16 without the byte order mark, which reads as valid UTF-8 with a NUL after each letter.
  const utf16le = join(dir, 'utf16le.yaml')
  writeFileSync(utf16le, Buffer.from('categories:\n  weapons:\n    threshold: 0.6\n', 'utf16le'))
  const nul = join(dir, 'nul.yaml')
  writeFileSync(nul, 'categories:\n  redness:\n    prompts: [re\0d]\n')
  const latin1 = join(dir, 'latin1.yaml')
  writeFileSync(latin1, Buffer.from('categories:\n  redness:\n    prompts: ["r\xe9d"]\n', 'latin1'))
  for (const [path, message] of [
    [join(dir, 'missing.yaml'), `cannot read the policy file ${join(dir, 'missing.yaml')}: no such file`],
    [big, `the policy file ${big} is larger than 1 MiB`],
    [dir, `the policy file ${dir} is not a file`],
    [utf16, `the policy file ${utf16} is UTF-16 text: save it as UTF-8`],
    [utf16le, `the policy file ${utf16le} is UTF-16 text without a byte order mark: save it as UTF-8`],
    [nul, `the policy file ${nul} holds a NUL byte (line 3): it is not text`],
    [latin1, `the policy file ${latin1} is not UTF-8 text (line 3): save it as UTF-8`],
  ]) {
    try {
      await loadPolicyFile(path)
      assert.unreachable()
    } catch (e) {
      assert.ok(isModError(e))
      assert.is(e.code, 'invalid_config')
      assert.is(e.message, message)
    }
  }
})

test('formatProblems writes one path:line:col: message line per problem', () => {
  assert.equal(formatProblems('p.yaml', [{line: 3, column: 5, message: 'm'}]), ['p.yaml:3:5: m'])
})

test('findPolicyFile finds the nearest .modrc.yaml or mod.config.yml up to the stop folder', async () => {
  const root = join(dir, 'find')
  const deep = join(root, 'project', 'src', 'deep')
  mkdirSync(deep, {recursive: true})
  assert.is(await findPolicyFile(deep, {stopDir: root}), undefined)
  writeFileSync(join(root, 'project', 'mod.config.yml'), 'preset: fast\n')
  assert.is(await findPolicyFile(deep, {stopDir: root}), join(root, 'project', 'mod.config.yml'))
  writeFileSync(join(root, 'project', 'src', '.modrc.yaml'), '')
  assert.is(await findPolicyFile(deep, {stopDir: root}), join(root, 'project', 'src', '.modrc.yaml'))
  writeFileSync(join(deep, '.modrc'), 'trim_borders: false\n')
  assert.is(await findPolicyFile(deep, {stopDir: root}), join(deep, '.modrc'))
})

test('two policy files in one folder are refused, naming both; the nearer folder is looked at first', async () => {
  const root = join(dir, 'two')
  const inner = join(root, 'inner')
  mkdirSync(inner, {recursive: true})
  writeFileSync(join(root, '.modrc.yaml'), 'preset: fast\n')
  writeFileSync(join(root, 'mod.config.yaml'), 'trim_borders: false\n')
  const refused = await findPolicyFile(root, {stopDir: root}).then(
    () => 'found',
    (e: {code: string; message: string}) => `${e.code}: ${e.message}`,
  )
  assert.is(refused, `invalid_config: 2 policy files in ${root}: .modrc.yaml, mod.config.yaml; keep one, or name the one to use with --config or MOD_CONFIG`)
  writeFileSync(join(inner, '.modrc'), '')
  assert.is(await findPolicyFile(inner, {stopDir: root}), join(inner, '.modrc'))
})

test('findPolicyFile does not look above the stop folder', async () => {
  const root = join(dir, 'stop')
  const inner = join(root, 'inner')
  mkdirSync(inner, {recursive: true})
  writeFileSync(join(root, '.modrc.yml'), 'preset: fast\n')
  assert.is(await findPolicyFile(inner, {stopDir: inner}), undefined)
  assert.is(await findPolicyFile(inner, {stopDir: root}), join(root, '.modrc.yml'))
})

test('findPolicyFile only reports a path: a broken file is left to loadPolicyFile and its line numbers', async () => {
  const root = join(dir, 'broken')
  mkdirSync(root, {recursive: true})
  writeFileSync(join(root, '.modrc.yaml'), 'categories: [\n')
  assert.is(await findPolicyFile(root, {stopDir: root}), join(root, '.modrc.yaml'))
})

test('the search runs no script and reads nothing but the policy names: .config/config.js and package.json of the folder are never looked at', async () => {
  const root = join(dir, 'scripts')
  mkdirSync(join(root, '.config'), {recursive: true})
  const marker = join(root, 'ran')
  // cosmiconfig's own configuration files, which its search ran or followed before any policy name was looked for.
  writeFileSync(join(root, '.config', 'config.js'), `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')\nmodule.exports = {}\n`)
  writeFileSync(join(root, '.config', 'config.yaml'), 'cosmiconfig:\n  searchPlaces: ["../../../../../../../../etc/hostname"]\n')
  writeFileSync(join(root, 'package.json'), '{"name": "x",}')
  const cwd = process.cwd()
  process.chdir(root)
  try {
    const config = await loadConfig({}, {}, root)
    assert.equal([config.policyPath, config.policyFound], [undefined, false])
  } finally {
    process.chdir(cwd)
  }
  assert.not.ok(existsSync(marker), 'the script ran')
})

test('a FIFO or a device found by name is refused at once when read (never waited on); one others planted in a shared folder is passed over', async () => {
  const root = join(dir, 'special')
  mkdirSync(root, {recursive: true})
  execFileSync('mkfifo', [join(root, '.modrc')])
  assert.is(await findPolicyFile(root, {stopDir: root}), join(root, '.modrc'))
  const e = await loadPolicyFile(join(root, '.modrc')).catch((x: unknown) => x)
  assert.ok(isModError(e) && e.message === `the policy file ${join(root, '.modrc')} is not a file`, String(e))
  // A folder anyone may write to (as /tmp), and a name put there by another user than this one (or root).
  const shared = join(dir, 'shared')
  mkdirSync(shared, {recursive: true})
  chmodSync(shared, 0o1777)
  writeFileSync(join(shared, '.modrc.yaml'), 'categories:\n  nudity:\n    enabled: false\n')
  const me = process.getuid?.()
  if (me === 0) chownSync(join(shared, '.modrc.yaml'), 4242, 4242)
  const someoneElse = me === 0 ? undefined : 4242
  assert.is(await findPolicyFile(shared, {stopDir: shared, ...(me === 0 ? {} : {uid: someoneElse})}), undefined)
  // The same in a folder only its owner may write to is taken.
  chmodSync(shared, 0o755)
  assert.is(await findPolicyFile(shared, {stopDir: shared, ...(me === 0 ? {} : {uid: someoneElse})}), join(shared, '.modrc.yaml'))
})

test('with none from the folder up, the policy in the user configuration folder is found (mod/config.yaml)', async () => {
  const root = join(dir, 'user-config')
  const home = join(root, 'config-home')
  mkdirSync(join(home, 'mod'), {recursive: true})
  mkdirSync(join(root, 'project'), {recursive: true})
  assert.is(await findPolicyFile(join(root, 'project'), {stopDir: root, configHome: home}), undefined)
  writeFileSync(join(home, 'mod', 'config.yaml'), 'preset: fast\n')
  assert.is(await findPolicyFile(join(root, 'project'), {stopDir: root, configHome: home}), join(home, 'mod', 'config.yaml'))
  writeFileSync(join(root, '.modrc'), 'preset: fast\n')
  assert.is(await findPolicyFile(join(root, 'project'), {stopDir: root, configHome: home}), join(root, '.modrc'))
  // The note that names a policy found by name says where it was found.
  rmSync(join(root, '.modrc'))
  const config = await loadConfig({}, {XDG_CONFIG_HOME: home}, join(root, 'project'))
  assert.equal([config.policyPath, config.policyFound], [join(home, 'mod', 'config.yaml'), 'in the user configuration folder'])
})

test('a relative XDG_CONFIG_HOME is ignored, as the XDG specification says: the policy in ~/.config/mod is found', async () => {
  const root = join(dir, 'relative-xdg')
  const home = join(root, 'home')
  mkdirSync(join(home, '.config', 'mod'), {recursive: true})
  mkdirSync(join(root, 'project'), {recursive: true})
  writeFileSync(join(home, '.config', 'mod', 'config.yaml'), 'preset: fast\n')
  const saved = process.env.HOME
  process.env.HOME = home
  try {
    const config = await loadConfig({}, {XDG_CONFIG_HOME: '.config'}, join(root, 'project'))
    assert.equal([config.policyPath, config.policyFound], [join(home, '.config', 'mod', 'config.yaml'), 'in the user configuration folder'])
  } finally {
    process.env.HOME = saved
  }
})

test('summarizePolicy counts categories and names custom, changed and disabled ones', () => {
  const {file} = validatePolicyText(
    'preset: balanced\ncategories:\n  redness:\n    prompts: [red]\n  weapons:\n    threshold: 0.6\n  tobacco:\n    enabled: false\n  gore:\n    enabled: true\n',
  )
  assert.ok(file)
  assert.equal(summarizePolicy(file), {
    categories: 11,
    custom: ['redness'],
    disabled: ['tobacco'],
    changed: ['weapons'],
    preset: 'balanced',
    trim_borders: true,
    text_rules: [],
  })
})

test.run()
