import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {isMap} from 'yaml'

import {buildPolicy, summarizePolicy} from '../../../src/lib/policy/load.js'
import {validatePolicyText} from '../../../src/lib/policy/schema.js'
import type {PolicyPlugins, PolicySection} from '../../../src/lib/policy/section.js'
import {readNamed, readNumber, report, scalarValue, validName} from '../../../src/lib/policy/yaml-reader.js'
import {ROOT} from '../../helpers/cli.js'

const at = (line: number, column: number, message: string) => ({line, column, message})

/** A stand-in signal's section: `stamps: {name: {category, weight}}`, feeding `stamped` (its own) or any category. */
const stamps: PolicySection<{name: string; category: string; weight: number}[], string[]> = {
  key: 'stamps',
  ownCategories: ['stamped'],
  read(ctx, node, keyAt) {
    const entries = readNamed(ctx, node, keyAt, 'stamps', 'stamp names to {category, weight}', (name, value, entryAt) => {
      if (!validName(ctx, name, entryAt, 'stamp')) return undefined
      const field = (key: string) => (isMap(value) ? value.get(key, true) : undefined)
      const category = scalarValue(field('category'))
      const weight = readNumber(ctx, field('weight'), entryAt, `stamps.${name}.weight`, {above: 0, text: 'a number above 0'})
      return typeof category === 'string' && weight !== undefined ? {name, category, weight} : undefined
    })
    return {
      value: entries,
      check({names, disabled}) {
        for (const e of entries) if (disabled.has(e.category) || ![...names, 'stamped'].includes(e.category)) report(ctx, keyAt, `stamps.${e.name}: no category "${e.category}"`)
      },
    }
  },
  build: (entries) => ({value: (entries ?? []).map((e) => e.name), feeds: (entries ?? []).map((e) => ({category: e.category, weight: e.weight}))}),
  summary: (entries) => ({fields: {stamps: (entries ?? []).map((e) => e.name)}, lines: []}),
}
const plugins: PolicyPlugins = {sections: [{signal: 'stamper', section: stamps}], switches: new Map([['stamper', true]])}

test('a section passed in is read under its key, checked against the categories, and listed among the keys', () => {
  const valid = validatePolicyText(plugins, 'stamps:\n  a: {category: stamped, weight: 2}\n  b: {category: weapons, weight: 0.5}\n')
  assert.equal(valid, {
    problems: [],
    file: {categories: [], stamps: [{name: 'a', category: 'stamped', weight: 2}, {name: 'b', category: 'weapons', weight: 0.5}]},
  })
  const text = 'categories:\n  gore: {enabled: false}\nstamps:\n  c: {category: gore, weight: 0}\n  d: {category: gore, weight: 1}\ntext: {}\n'
  assert.equal(validatePolicyText(plugins, text).problems, [
    at(3, 1, 'stamps.d: no category "gore"'),
    at(4, 31, 'stamps.c.weight must be a number above 0, not 0'),
    at(6, 1, 'unknown key "text" (expected one of preset, trim_borders, neutral, specialists, categories, stamps)'),
  ])
})

test("buildPolicy keeps a section's part under its key and gives its signal the weights it names, creating its own category", () => {
  const {file} = validatePolicyText(plugins, 'stamps:\n  a: {category: stamped, weight: 2}\n  b: {category: weapons, weight: 0.5}\n')
  const policy = buildPolicy(plugins, file)
  assert.equal(policy.sections, {stamps: ['a', 'b']})
  assert.equal(policy.specialists, {stamper: true})
  const stamped = policy.categories.find((c) => c.name === 'stamped')
  assert.equal([stamped?.signals, stamped?.prompts, stamped?.threshold], [{stamper: 2}, [], 0.5])
  assert.is(policy.categories.find((c) => c.name === 'weapons')?.signals.stamper, 0.5)
  assert.is(buildPolicy(plugins).categories.some((c) => c.name === 'stamped'), false)
  assert.equal(summarizePolicy(plugins, file ?? {categories: []}).stamps, ['a', 'b'])
})

test('the policy module imports no signal and not the registry: the signals are passed in', () => {
  const folder = join(ROOT, 'src', 'lib', 'policy')
  const imports = readdirSync(folder).flatMap((name) =>
    [...readFileSync(join(folder, name), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => `${name}: ${m[1]}`),
  )
  assert.equal(imports.filter((i) => i.includes('signals/')), [])
})

test.run()
