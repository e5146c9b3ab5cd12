// What `npm run build` makes of dist/ beyond tsc's output (npm test builds first): TypeBox bundled into one module,
// which every module of mod imports instead of the package's 374; and the container image's build has what it runs.
import {readFileSync, readdirSync} from 'node:fs'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT} from './helpers/cli.js'

const DIST = join(ROOT, 'dist')
const files = (dir: string): string[] => readdirSync(dir, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]))

test('dist/lib/typebox.js is TypeBox in one module, with its notice, and no module of dist imports the package', async () => {
  const bundle = readFileSync(join(DIST, 'lib', 'typebox.js'), 'utf8')
  assert.not.match(bundle, /^\s*(import|export\s*\*\s*from)\s/m, 'the bundle imports nothing')
  assert.match(bundle, /^\/\*! TypeBox \d+\.\d+\.\d+[\s\S]*The MIT License \(MIT\)[\s\S]*?\*\//)
  const importers = files(DIST).filter((f) => f.endsWith('.js') && /\bfrom\s*['"]typebox['"]|import\(\s*['"]typebox['"]\s*\)/.test(readFileSync(f, 'utf8')))
  assert.equal(importers, [])
  const {Type} = (await import(pathToFileURL(join(DIST, 'lib', 'typebox.js')).href)) as typeof import('../src/lib/typebox.js')
  assert.equal(Type.Object({a: Type.Integer()}).required, ['a'])
})

test("the Dockerfile's build stage copies every script `npm run build` runs", () => {
  const {scripts} = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {scripts: {build: string}}
  const run = [...scripts.build.matchAll(/\bnode (scripts\/\S+)/g)].map((m) => m[1])
  assert.ok(run.includes('scripts/bundle-typebox.mjs'), scripts.build)
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
  const stage = dockerfile.slice(dockerfile.indexOf(' AS build'), dockerfile.indexOf('RUN npm run build'))
  const copied = [...stage.matchAll(/^COPY (.+) \S+$/gm)].flatMap((m) => m[1].split(' '))
  for (const script of run) assert.ok(copied.includes(script), `${script} is not copied before the build`)
})

test.run()
