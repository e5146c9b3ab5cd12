// Turns the TypeScript under src, test, scripts and bench into JavaScript once per test run, so that each test
// file starts as plain node instead of going through a loader hook on every import (half the CPU of a small test
// file on Node 20). The copy keeps the layout, and import.meta.url/dirname/filename keep naming the .ts files, so
// paths a test or module builds from its own place (fixtures, models/, package.json) resolve in the repository.
import {transform} from 'esbuild'
import {mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {dirname, join, relative} from 'node:path'
import {pathToFileURL} from 'node:url'

const TREES = ['src', 'test', 'scripts', 'bench']
// Generated or downloaded trees: test data, benchmark models and outputs, the Python venv.
const SKIPPED = new Set(['node_modules', 'test/fixtures', 'bench/out', 'bench/models', 'bench/.venv'])

function sources(root, dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (SKIPPED.has(name) || SKIPPED.has(relative(root, p))) return []
    if (statSync(p).isDirectory()) return sources(root, p)
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [p] : []
  })
}

export function mirrorOf(root, outDir, file) {
  return join(outDir, relative(root, file)).replace(/\.ts$/, '.js')
}

export async function transpile(root, outDir) {
  rmSync(outDir, {recursive: true, force: true})
  const files = TREES.flatMap((t) => sources(root, join(root, t)))
  await Promise.all(
    files.map(async (file) => {
      const {code} = await transform(readFileSync(file, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: 'node20',
        sourcemap: 'inline',
        sourcefile: file,
        define: {
          'import.meta.url': JSON.stringify(pathToFileURL(file).href),
          'import.meta.dirname': JSON.stringify(dirname(file)),
          'import.meta.filename': JSON.stringify(file),
        },
      })
      const out = mirrorOf(root, outDir, file)
      mkdirSync(dirname(out), {recursive: true})
      writeFileSync(out, code)
    }),
  )
  return files.length
}
