import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {validatePolicyText} from '../../../src/lib/config/policy.js'
import {POLICY_PLUGINS} from '../../../src/lib/signals/registry.js'

/** The keys a policy file may hold: its own, then each signal's section (from the registry). */
const TOP_KEYS = ['preset', 'trim_borders', 'neutral', 'specialists', 'categories', ...POLICY_PLUGINS.sections.map((s) => s.section.key)].join(', ')

const at = (line: number, column: number, message: string) => ({line, column, message})

test('a valid file gives its entries as written, and no problem', () => {
  const text = [
    'preset: balanced',
    'trim_borders: false',
    'neutral: ["a photo", "a photo of a street"]',
    'categories:',
    '  redness:',
    '    prompts: ["red"]',
    '    negatives: []',
    '    parent: null',
    '    threshold: 0.7',
    '    calibration: {scale: 2, bias: -1}',
    '  weapons:',
    '    threshold: 0.6',
    '  tobacco:',
    '    enabled: false',
    '  gore:',
    '    parent: weapons',
    '',
  ].join('\n')
  assert.equal(validatePolicyText(text), {
    problems: [],
    file: {
      preset: 'balanced',
      trim_borders: false,
      neutral: ['a photo', 'a photo of a street'],
      categories: [
        {name: 'redness', prompts: ['red'], negatives: [], parent: null, threshold: 0.7, calibration: {scale: 2, bias: -1}},
        {name: 'weapons', threshold: 0.6},
        {name: 'tobacco', enabled: false},
        {name: 'gore', parent: 'weapons'},
      ],
    },
  })
})

test('an empty file, a comment-only file and an empty categories key are valid', () => {
  assert.equal(validatePolicyText(''), {problems: [], file: {categories: []}})
  assert.equal(validatePolicyText('# nothing here\n'), {problems: [], file: {categories: []}})
  assert.equal(validatePolicyText('categories:\n'), {problems: [], file: {categories: []}})
})

test('every kind of problem is reported with its line and column, all at once', () => {
  const text = [
    /*  1 */ 'preset: fastest',
    /*  2 */ 'trim_borders: yes',
    /*  3 */ 'colour: blue',
    /*  4 */ 'categories:',
    /*  5 */ '  redness:',
    /*  6 */ '    prompts: ["red"]',
    /*  7 */ '    threshold: 1.5',
    /*  8 */ '    parent: nothing',
    /*  9 */ '    colour: x',
    /* 10 */ '  empty_new: {}',
    /* 11 */ '  weapons:',
    /* 12 */ '    threshold: "high"',
    /* 13 */ '    prompts: []',
    /* 14 */ '  a:',
    /* 15 */ '    prompts: [a]',
    /* 16 */ '    parent: b',
    /* 17 */ '  b:',
    /* 18 */ '    prompts: [b]',
    /* 19 */ '    parent: a',
    /* 20 */ '  tobacco:',
    /* 21 */ '    enabled: "no"',
    /* 22 */ '  alcohol:',
    /* 23 */ '    enabled: false',
    /* 24 */ '  kid:',
    /* 25 */ '    prompts: [k]',
    /* 26 */ '    parent: alcohol',
    /* 27 */ '  bad name:',
    /* 28 */ '    prompts: [x]',
    /* 29 */ '  cal:',
    /* 30 */ '    prompts: [x, 3, ""]',
    /* 31 */ '    negatives: "a knife"',
    /* 32 */ '    calibration: {scale: 0, bias: x, foo: 1}',
    /* 33 */ '  drugs: [1]',
    /* 34 */ '  self_harm:',
    /* 35 */ '    parent: 7',
    /* 36 */ '    threshold: -0.1',
    '',
  ].join('\n')
  const {problems, file} = validatePolicyText(text)
  assert.is(file, undefined)
  assert.equal(problems, [
    at(1, 9, 'preset must be one of fast, balanced, accurate, not "fastest"'),
    at(2, 15, 'trim_borders must be true or false, not "yes"'),
    at(3, 1, `unknown key "colour" (expected one of ${TOP_KEYS})`),
    at(7, 16, 'categories.redness.threshold must be a number from 0 to 1, not 1.5'),
    at(8, 13, 'categories.redness.parent: no category is named "nothing"'),
    at(9, 5, 'unknown key "colour" in categories.redness (expected one of enabled, prompts, negatives, parent, threshold, calibration)'),
    at(10, 3, 'new category "empty_new" needs prompts: a list of at least one prompt'),
    at(12, 16, 'categories.weapons.threshold must be a number from 0 to 1, not "high"'),
    at(13, 14, 'categories.weapons.prompts must list at least one prompt'),
    at(16, 13, 'categories.a.parent: a cycle of parents: a → b → a'),
    at(21, 14, 'categories.tobacco.enabled must be true or false, not "no"'),
    at(26, 13, 'categories.kid.parent: category "alcohol" is disabled'),
    at(27, 3, 'category name "bad name" may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long'),
    at(30, 18, 'categories.cal.prompts[1] must be non-empty text, not 3'),
    at(30, 21, 'categories.cal.prompts[2] must be non-empty text, not ""'),
    at(31, 16, 'categories.cal.negatives must be a list of prompts, not "a knife"'),
    at(32, 26, 'categories.cal.calibration.scale must be a number above 0, not 0'),
    at(32, 35, 'categories.cal.calibration.bias must be a number, not "x"'),
    at(32, 38, 'unknown key "foo" in categories.cal.calibration (expected one of scale, bias)'),
    at(33, 10, 'categories.drugs must be a mapping of category fields, not a list'),
    at(35, 13, 'categories.self_harm.parent must be a category name or null, not 7'),
    at(36, 16, 'categories.self_harm.threshold must be a number from 0 to 1, not -0.1'),
  ])
})

test('hash_lists: file required, category known_bad and distance 31 by default', () => {
  const ok = validatePolicyText('hash_lists:\n  removals:\n    file: lists/removals.txt\n  shared:\n    file: /srv/shared.txt\n    category: weapons\n    distance: 20\n    shared: true\n')
  assert.equal(ok.problems, [])
  assert.equal(ok.file?.hash_lists, [
    {name: 'removals', category: 'known_bad', distance: 31, file: 'lists/removals.txt', line: 3},
    {name: 'shared', category: 'weapons', distance: 20, shared: true, file: '/srv/shared.txt', line: 5},
  ])
  const bad = validatePolicyText('hash_lists:\n  a:\n    distance: 64\n  b:\n    file: x.txt\n    distance: 3.5\n    colour: red\n  c:\n    category: 12\n  "d e":\n    file: y.txt\n  f: x.txt\n  g:\n    file: z.txt\n    shared: maybe\n')
  assert.equal(bad.problems, [
    at(3, 15, 'hash_lists.a.distance must be a whole number from 0 to 43, not 64'),
    at(6, 15, 'hash_lists.b.distance must be a whole number from 0 to 43, not 3.5'),
    at(7, 5, 'unknown key "colour" in hash_lists.b (expected one of file, category, distance, shared)'),
    at(9, 15, 'hash_lists.c.category must be a category name, not 12'),
    at(10, 3, 'hash list name "d e" may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long'),
    at(12, 6, 'hash_lists.f must be a mapping such as {file: removals.txt}, not "x.txt"'),
    at(15, 13, 'hash_lists.g.shared must be true or false, not "maybe"'),
  ])
})

test('hash_lists: a list counts in an enabled category of the policy, a custom one (written anywhere), or known_bad', () => {
  const text =
    'hash_lists:\n  a:\n    file: a.txt\n    category: weapon\n  b:\n    file: b.txt\n    category: gore\n  c:\n    file: c.txt\n    category: redness\n' +
    '  d:\n    file: d.txt\n    category: known_bad\ncategories:\n  gore:\n    enabled: false\n  redness:\n    prompts: [red]\n'
  assert.equal(validatePolicyText(text).problems, [
    at(4, 15, 'hash_lists.a.category: no category is named "weapon"; did you mean "weapons"?'),
    at(7, 15, 'hash_lists.b.category: category "gore" is disabled'),
  ])
})

test('YAML syntax errors are all reported with their lines, and alone', () => {
  const text = 'colour: x\ncategories:\n  redness:\n    prompts: ["red"\n  weapons: {threshold: 0.6}\nx: "open\n'
  assert.equal(validatePolicyText(text), {
    problems: [
      at(5, 3, 'YAML: Flow sequence in block collection must be sufficiently indented and end with a ]'),
      at(7, 1, 'YAML: Missing closing "quote'),
    ],
  })
})

test('values nested too deeply for the parser are one problem in words, not the JavaScript engine\'s stack overflow', () => {
  for (const text of [`categories: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`, `categories: ${'{a: '.repeat(20_000)}1${'}'.repeat(20_000)}\n`]) {
    const {problems} = validatePolicyText(text)
    assert.equal(
      problems.map((p) => [p.line, p.message]),
      [[1, 'YAML: the values here nest too deeply to be read (hundreds of levels): a policy nests a few']],
    )
  }
})

test('a category named twice is a YAML error on its second line, naming it; a second document is said in words', () => {
  assert.equal(validatePolicyText('categories:\n  weapons: {threshold: 0.6}\n  weapons: {threshold: 0.7}\n').problems, [
    at(3, 3, 'YAML: the key "weapons" is given twice in the same mapping: keep one'),
  ])
  assert.equal(validatePolicyText('preset: fast\n---\npreset: balanced\n').problems, [at(2, 1, 'YAML: a policy file holds one document: this `---` starts a second one')])
})

test('a tag YAML does not define is a problem at its place, not a value read as if it had none', () => {
  const text = 'categories:\n  redness:\n    prompts: !list ["red"]\n    threshold: !!flaot 0.5\n'
  assert.equal(validatePolicyText(text).problems, [
    at(3, 14, 'YAML: the tag !list means nothing to mod, which would read the value as if it were not there: remove it (a policy holds plain text, numbers, true or false, lists and mappings)'),
    at(4, 16, 'YAML: the tag !!flaot means nothing to mod, which would read the value as if it were not there: remove it (a policy holds plain text, numbers, true or false, lists and mappings)'),
  ])
  // YAML's own tags keep their meaning.
  assert.equal(validatePolicyText('categories:\n  redness:\n    prompts: !!seq ["red"]\n    threshold: !!float 0.5\n').problems, [])
})

test('a file that is not a mapping is refused', () => {
  assert.equal(validatePolicyText('- weapons\n- gore\n').problems, [
    at(1, 1, `a policy file must be a mapping (keys ${TOP_KEYS}), not a list`),
  ])
  assert.equal(validatePolicyText('categories: weapons\n').problems, [
    at(1, 13, 'categories must be a mapping from category names to their fields, not "weapons"'),
  ])
})

test('a category name that differs from a built-in, or from another, only in case is a problem on its line', () => {
  assert.equal(validatePolicyText('categories:\n  Weapons: {prompts: [a gun]}\n  redness: {prompts: [red]}\n  Redness: {prompts: [red]}\n').problems, [
    at(2, 3, 'category name "Weapons" differs from "weapons" only in case: write weapons to change that category, or give this one a name of its own'),
    at(4, 3, 'category name "Redness" differs from "redness" only in case: write redness to change that category, or give this one a name of its own'),
  ])
})

test('a wrong file given as the policy (a .env, a key) is described, never copied into the message', () => {
  const secret = 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nDB_PASSWORD=hunter2\n'
  assert.equal(validatePolicyText(secret).problems, [at(1, 1, `a policy file must be a mapping (keys ${TOP_KEYS}), not text (82 characters)`)])
  assert.equal(validatePolicyText('hunter2\n').problems, [at(1, 1, `a policy file must be a mapping (keys ${TOP_KEYS}), not text (7 characters)`)])
  // A value is quoted to show a typo, unless it is long or spans lines.
  const long = 'k'.repeat(65)
  assert.equal(validatePolicyText(`preset: ${long}\n`).problems, [at(1, 9, 'preset must be one of fast, balanced, accurate, not text (65 characters)')])
})

test('a parent cycle of three, and a category that is its own parent, are found', () => {
  const text = [
    'categories:',
    '  violence:',
    '    parent: gore',
    '  selfish:',
    '    prompts: [x]',
    '    parent: selfish',
    '  nudity:',
    '    parent: weapons',
    '',
  ].join('\n')
  assert.equal(validatePolicyText(text).problems, [
    at(3, 13, 'categories.violence.parent: a cycle of parents: violence → gore → violence'),
    at(6, 13, 'categories.selfish.parent: a cycle of parents: selfish → selfish'),
  ])
  const three = 'categories:\n  nudity:\n    parent: weapons\n  violence:\n    parent: sexual_activity\n'
  assert.equal(validatePolicyText(three).problems, [
    at(3, 13, 'categories.nudity.parent: a cycle of parents: nudity → weapons → violence → sexual_activity → nudity'),
  ])
})

test('a misspelt key or parent names the nearest known one', () => {
  const policy = 'categories:\n  weapons:\n    treshold: 0.3\n    parent: violance\n'
  assert.equal(validatePolicyText(policy).problems, [
    at(3, 5, 'unknown key "treshold" in categories.weapons; did you mean "threshold"? (expected one of enabled, prompts, negatives, parent, threshold, calibration)'),
    at(4, 13, 'categories.weapons.parent: no category is named "violance"; did you mean "violence"?'),
  ])
})

test('a new category needs prompts even when disabled, which catches a misspelt built-in', () => {
  assert.equal(validatePolicyText('categories:\n  tobaco:\n    enabled: false\n').problems, [
    at(2, 3, 'new category "tobaco" needs prompts: a list of at least one prompt (or did you mean the built-in "tobacco"?)'),
  ])
  assert.equal(validatePolicyText('categories:\n  redness:\n').problems, [
    at(2, 3, 'new category "redness" needs prompts: a list of at least one prompt'),
  ])
})

test('neutral must list at least one prompt: a category without negatives would be measured against nothing and score 1 on every image', () => {
  assert.equal(validatePolicyText('neutral: []\ncategories:\n  redness:\n    prompts: [red]\n').problems, [at(1, 10, 'neutral must list at least one prompt')])
})

test('disabling a built-in parent is fine while its children keep the inherited parent', () => {
  assert.equal(validatePolicyText('categories:\n  violence:\n    enabled: false\n').problems, [])
})

test('a parent may name a custom category defined later in the file', () => {
  const text = 'categories:\n  child:\n    prompts: [c]\n    parent: later\n  later:\n    prompts: [l]\n'
  assert.equal(validatePolicyText(text).problems, [])
})

test('aliases resolve to their anchored value', () => {
  const text = 'neutral: &n ["a photo"]\ncategories:\n  redness:\n    prompts: ["red"]\n    negatives: *n\n'
  assert.equal(validatePolicyText(text).file?.categories, [{name: 'redness', prompts: ['red'], negatives: ['a photo']}])
})

test('an alias with no anchor before it is a problem on the alias that says so, not a value said to be empty', () => {
  const message = (name: string) => `YAML: the alias *${name} has no anchor &${name} before it: anchor the value where it is first written, then repeat it with *${name}`
  assert.equal(validatePolicyText('categories:\n  weapons: {threshold: *t}\n  gore: {threshold: &t 0.4}\n').problems, [at(2, 24, message('t'))])
  assert.equal(validatePolicyText('text:\n  rules:\n    spam: {category: drugs, words: *w}\n').problems, [at(3, 36, message('w'))])
})

test('a `<<` merge key (YAML 1.1) is a problem that says so, not an unknown key or a category named "<<"', () => {
  const message = 'YAML: `<<` merges a mapping in YAML 1.1 only; a policy is read as YAML 1.2, where it is a key like any other: write the fields out (an alias, `*name`, may stand for a whole value)'
  const text = 'categories:\n  weapons: &b\n    threshold: 0.6\n  gore:\n    <<: *b\n    prompts: [blood]\n  <<: {drugs: {threshold: 0.2}}\n'
  assert.equal(validatePolicyText(text).problems, [at(5, 5, message), at(7, 3, message)])
  // Quoted, or as a value, it is text like any other.
  assert.equal(validatePolicyText('categories: {redness: {prompts: ["<<", <<]}}\n').problems, [])
})

test('aliases that repeat more than 100 000 values in all are one problem at the first alias, not billions of values read', () => {
  // Ten values, each level ten of the one before: seven lines of aliases of aliases stand for ten million prompts.
  const levels = ['l0: &l0 [a, b, c, d, e, f, g, h, i, j]']
  for (let i = 1; i <= 6; i++) levels.push(`l${i}: &l${i} [${Array(10).fill(`*l${i - 1}`).join(', ')}]`)
  const text = [...levels, 'categories:', '  redness:', '    prompts: *l6', ''].join('\n')
  const message = 'YAML: the aliases of this file (the first, *l0, here) repeat more than 100 000 values in all, where a policy may repeat at most 100 000: write the values out, or repeat fewer'
  assert.equal(validatePolicyText(text).problems, [at(2, 10, message)])
  // Sharing lists between categories, as aliases are meant for, stays well within it.
  const shared = ['neutral: &n [a photo, a drawing]', 'categories:', ...Array.from({length: 50}, (_, i) => `  c${i}: {prompts: [x], negatives: *n}`), ''].join('\n')
  assert.equal(validatePolicyText(shared).problems, [])
})

test('a YAML infinity is not a valid threshold or bias', () => {
  assert.equal(validatePolicyText('categories:\n  weapons:\n    calibration: {bias: .inf}\n').problems, [
    at(3, 25, 'categories.weapons.calibration.bias must be a number, not .inf'),
  ])
})

test('text.budget and a hash list distance are whole numbers in plain decimal, as their MOD_* variables take them, named as written', () => {
  const budget = 'a whole number of recogniser columns from 1280 to 256000'
  assert.equal(validatePolicyText('text:\n  budget: 2000\n').problems, [])
  // YAML reads these as 10000, 4096, 2000, 2000 and 100000000000000000000: a problem names each as written.
  for (const value of ['1e4', '0x1000', '2000.0', '"2000"', '99999999999999999999', '-1', '1.5', '.inf', 'abc']) {
    const shown = value === 'abc' ? '"abc"' : value
    assert.equal(validatePolicyText(`text:\n  budget: ${value}\n`).problems, [at(2, 11, `text.budget must be ${budget}, not ${shown}`)], value)
  }
  for (const value of ['1e1', '0x10', '20.0']) {
    const text = `hash_lists:\n  a:\n    file: x.txt\n    distance: ${value}\n`
    assert.equal(validatePolicyText(text).problems, [at(4, 15, `hash_lists.a.distance must be a whole number from 0 to 43, not ${value}`)], value)
  }
})

test('text rules: one kind each, a category that is enabled or contact_info, detectors by name, regular expressions that compile', () => {
  const text = [
    'text:',
    '  video: true',
    '  rules:',
    '    contacts:',
    '      category: contact_info',
    '      detect: [email, fax]',
    '    spam:',
    '      category: wepons',
    '      words: [free]',
    '    mixed:',
    '      category: hate_symbols',
    '      words: [a]',
    '      regex: x',
    '    nothing:',
    '      category: hate_symbols',
    '    wallets:',
    '      category: drugs',
    '      regex: ["(?<n", "ok"]',
    '      colour: red',
    'categories:',
    '  drugs:',
    '    enabled: false',
    '',
  ].join('\n')
  assert.equal(validatePolicyText(text).problems, [
    at(6, 23, 'text.rules.contacts.detect must list detectors among email, phone, url, handle, not "fax"'),
    at(8, 17, 'text.rules.spam.category: no enabled category is named "wepons"; did you mean "weapons"?'),
    at(10, 5, 'text.rules.mixed holds one kind of rule: words (and words_file), regex or detect; split it into rules'),
    at(14, 5, 'text.rules.nothing needs words, words_file, regex or detect'),
    at(18, 15, 'text.rules.wallets.regex[0] is not a valid regular expression (RE2 syntax): invalid named capture: `(?<n`'),
    at(19, 7, 'unknown key "colour" in text.rules.wallets (expected one of category, words, words_file, regex, detect)'),
  ])
})

test('a valid text section keeps its rules in file order', () => {
  const text = 'text:\n  rules:\n    contacts: {category: contact_info, detect: [email, url]}\n    spam: {category: weapons, words: [free guns], words_file: lists/spam.txt}\n    ids: {category: drugs, regex: "\\\\bx\\\\d+"}\n'
  const {problems, file} = validatePolicyText(text)
  assert.equal(problems, [])
  assert.equal(file?.text, {
    rules: [
      {name: 'contacts', category: 'contact_info', detect: ['email', 'url']},
      {name: 'spam', category: 'weapons', words: ['free guns'], words_file: 'lists/spam.txt', wordsFileAt: {line: 4, column: 63}},
      {name: 'ids', category: 'drugs', regex: ['\\bx\\d+']},
    ],
  })
})

test('an empty regex or detect list is a problem on its line, not a rule silently left out', () => {
  const text = 'text:\n  rules:\n    ids: {category: drugs, regex: []}\n    contacts: {category: contact_info, detect: []}\n'
  assert.equal(validatePolicyText(text).problems, [
    at(3, 35, 'text.rules.ids.regex must list at least one regular expression'),
    at(4, 48, 'text.rules.contacts.detect must list at least one detector among email, phone, url, handle'),
  ])
})

test('lookaround, backreferences and oversized patterns are refused on their line; nested repetition is accepted', () => {
  const text = [
    'text:',
    '  rules:',
    '    ids:',
    '      category: drugs',
    '      regex:',
    '        - "(a+)+$"',
    '        - "(?<=x)y"',
    '        - "x(?!y)"',
    '        - "(a)\\\\1"',
    '        - "(?<n>a)\\\\k<n>"',
    '        - "a{1000}"',
    '        - "\\\\u0041"',
    '',
  ].join('\n')
  const linear = 'which RE2 syntax leaves out so that matching takes time linear in the text'
  assert.equal(validatePolicyText(text).problems, [
    at(7, 11, `text.rules.ids.regex[1] uses lookahead or lookbehind (\`(?<=\`), ${linear}`),
    at(8, 11, `text.rules.ids.regex[2] uses lookahead or lookbehind (\`(?!\`), ${linear}`),
    at(9, 11, `text.rules.ids.regex[3] uses a backreference (\`\\1\`), ${linear}`),
    at(10, 11, `text.rules.ids.regex[4] uses a backreference (\`\\k\`), ${linear}`),
    at(
      11,
      11,
      'text.rules.ids.regex[5] compiles to 1002 instructions, more than the 1000 allowed (each character read may cost a step per instruction); use smaller repetition counts',
    ),
    at(12, 11, 'text.rules.ids.regex[6] is not a valid regular expression (RE2 syntax): invalid escape sequence: `\\u`'),
  ])
})

test('hash_lists and text.rules that are not mappings are refused on their line; an empty text.rules holds no rule', () => {
  assert.equal(validatePolicyText('hash_lists: [a.txt]\ntext:\n  rules: spam\n').problems, [
    at(1, 13, 'hash_lists must be a mapping from list names to {file, category, distance}, not a list'),
    at(3, 10, 'text.rules must be a mapping from rule names to rules, not "spam"'),
  ])
  assert.equal(validatePolicyText('text:\n  rules:\n'), {problems: [], file: {categories: [], text: {rules: []}}})
})

test('an empty text section is no rule, as an empty categories or hash_lists section is', () => {
  assert.equal(validatePolicyText('text:\nhash_lists:\ncategories:\n'), {problems: [], file: {categories: [], hash_lists: []}})
})

test('a text rule name follows the same naming rule as categories and hash lists', () => {
  const text = 'text:\n  rules:\n    bad rule:\n      category: contact_info\n      detect: [email]\n'
  assert.equal(validatePolicyText(text).problems, [at(3, 5, 'rule name "bad rule" may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long')])
})

test('a category name of letters that are not ASCII (Chinese, accented) is refused saying ASCII, and one starting with "-" saying how it must start', () => {
  const text = 'categories:\n  暴力内容:\n    prompts: [red]\n  café:\n    prompts: [red]\n  -red:\n    prompts: [red]\n'
  const rule = 'may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long'
  assert.equal(validatePolicyText(text).problems, [
    at(2, 3, `category name "暴力内容" ${rule}`),
    at(4, 3, `category name "café" ${rule}`),
    at(6, 3, `category name "-red" ${rule}`),
  ])
})

test.run()
