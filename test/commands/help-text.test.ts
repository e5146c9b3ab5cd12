// Every command's --help as a person reads it: prose that wraps to the terminal, examples to copy after their prompt.
// (Its own file: in one process, a command's help shown in-process leaves oclif unable to find that command again.)
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT, runInProcess} from '../helpers/cli.js'

test("every command's help: each paragraph of its description fills its lines, each example has its prompt", async () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {hidden?: boolean}>}
  for (const [id, command] of Object.entries(manifest.commands)) {
    if (command.hidden) continue
    const r = await runInProcess([...id.split(':'), '--help'])
    const section = (name: string) => (r.stdout.split(`\n${name}\n`)[1] ?? '').split(/\n(?=[A-Z])/)[0].trimEnd()
    // A line broken early (a line break in the source text) leaves room for the next line's first word.
    const lines = section('DESCRIPTION').split('\n')
    for (const [i, line] of lines.slice(0, -1).entries()) {
      const next = lines[i + 1]
      if (line.trim() === '' || next.trim() === '' || next.trim().startsWith('- ')) continue
      assert.ok(line.length + 1 + next.trim().split(' ')[0].length > 80, `${id}: "${line}" then "${next}"`)
    }
    for (const example of section('EXAMPLES').split('\n').filter((l) => l.trim() !== '')) assert.match(example, /^  \$ /, `${id}: ${example}`)
  }
})

test.run()
