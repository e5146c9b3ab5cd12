/**
 * The import graph of src/lib, read from the sources with TypeScript's own import scanner (type-only imports
 * included, as they still tie one module's meaning to another's): no cycle, nothing above the library, and the
 * two rule signals sharing the rule engine without reaching into each other's folder.
 */
import {readdirSync, readFileSync} from 'node:fs'
import {dirname, join, relative, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

import ts from 'typescript'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

const SRC = fileURLToPath(new URL('../../src', import.meta.url))
const LIB = join(SRC, 'lib')

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true, recursive: true})
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name))
}

/** Each file's relative imports, as the .ts files they name (a `.js` specifier names its `.ts` source). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const {importedFiles} = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => resolve(dirname(file), name).replace(/\.js$/, '.ts'))
    graph.set(file, [...new Set(targets)])
  }
  return graph
}

/** Every cycle found by a depth-first walk, each as the files on it (first repeated at the end), relative to src. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = []
  const done = new Set<string>()
  const path: string[] = []
  const visit = (file: string) => {
    const at = path.indexOf(file)
    if (at >= 0) {
      found.push([...path.slice(at), file].map((f) => relative(SRC, f)))
      return
    }
    if (done.has(file)) return
    path.push(file)
    for (const next of graph.get(file) ?? []) visit(next)
    path.pop()
    done.add(file)
  }
  for (const file of graph.keys()) visit(file)
  return found
}

const graph = importGraph(sourcesUnder(LIB))

test('the walk finds a cycle where there is one', () => {
  const a = join(LIB, 'a.ts')
  const b = join(LIB, 'b.ts')
  const c = join(LIB, 'c.ts')
  assert.equal(cycles(new Map([[a, [b]], [b, [c]], [c, [a]]])), [['lib/a.ts', 'lib/b.ts', 'lib/c.ts', 'lib/a.ts']])
  assert.equal(cycles(new Map([[a, [b, c]], [b, [c]], [c, []]])), [])
})

test('no import cycle in src/lib', () => {
  assert.ok(graph.size > 100, `read ${graph.size} files`)
  assert.equal(cycles(graph), [])
})

test('src/lib imports nothing outside itself (commands, server, cli)', () => {
  const outside = [...graph].flatMap(([file, targets]) => targets.filter((t) => !t.startsWith(LIB + '/')).map((t) => `${relative(SRC, file)} -> ${relative(SRC, t)}`))
  assert.equal(outside, [])
})

test('the text and codes signals import nothing of each other: the rule engine they share is src/lib/rules', () => {
  const folder = (f: string) => relative(join(LIB, 'signals'), f).split('/')[0]
  const crossing = [...graph].flatMap(([file, targets]) =>
    targets
      .filter((t) => ['text', 'codes'].includes(folder(file)) && ['text', 'codes'].includes(folder(t)) && folder(file) !== folder(t))
      .map((t) => `${relative(SRC, file)} -> ${relative(SRC, t)}`),
  )
  assert.equal(crossing, [])
  assert.ok([...graph.get(join(LIB, 'signals/codes/rules.ts')) ?? []].includes(join(LIB, 'rules/match.ts')))
})

test.run()
