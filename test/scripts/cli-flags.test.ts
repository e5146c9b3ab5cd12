// docs/cli.md lists the flags the commands really take: its generated reference is what the script writes from
// oclif.manifest.json (which the build writes from the flag definitions), and its hand-written tables name no flag
// that does not exist, with the short name and default the command has.
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BEGIN, END, flagTables, withFlagTables, type Manifest} from '../../scripts/docs/cli-flags.js'
import {ROOT} from '../helpers/cli.js'

const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as Manifest
const docs = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8')

test("docs/cli.md's flag reference is the one scripts/docs/cli-flags.ts writes from the manifest", () => {
  assert.is(docs, withFlagTables(docs, flagTables(manifest)), 'run npx tsx scripts/docs/cli-flags.ts after npm run build')
  for (const [id, command] of Object.entries(manifest.commands)) {
    const section = docs.split(`### mod ${id.replace(/:/g, ' ')}\n`)[1]?.split('\n### ')[0] ?? ''
    for (const name of Object.keys(command.flags)) assert.match(section, new RegExp(`\`(-.\`, \`)?--(\\[no-\\])?${name}[\` ]`), `${id} --${name}`)
  }
})

test("the hand-written flag tables of mod scan name its flags, with their short names and defaults", () => {
  const written = docs.slice(0, docs.indexOf(BEGIN)) + docs.slice(docs.indexOf(END))
  const flags = manifest.commands.scan.flags
  let rows = 0
  for (const table of written.split(/\n(?=\| flag \|)/).slice(1)) {
    const lines = table.split('\n')
    lines.splice(lines.findIndex((l) => !l.startsWith('|')))
    const header = lines[0].split('|').map((c) => c.trim())
    const defaultColumn = header.indexOf('default')
    for (const line of lines.slice(2)) {
      const cells = line.split(/(?<!\\)\|/).map((c) => c.trim())
      const name = /--([a-z][a-z0-9-]*)/.exec(cells[1])?.[1]
      if (name === undefined) continue
      rows++
      const flag = flags[name]
      assert.ok(flag, `docs/cli.md lists --${name}, which mod scan does not take`)
      const char = /`-([a-zA-Z0-9])`/.exec(cells[1])?.[1]
      assert.is(char, flag.char, `--${name}'s short name`)
      if (defaultColumn > 0 && flag.default !== undefined) assert.is(cells[defaultColumn], String(flag.default), `--${name}'s default`)
    }
  }
  assert.ok(rows >= 20, `${rows} rows read`)
})

test.run()
