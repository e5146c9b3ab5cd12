// Child Node processes that run a TypeScript file of this repository. test/run.mjs runs each test file from a
// JavaScript copy of the repository's TypeScript (test/fixtures/tmp/js-<its pid>); a child started from such a
// test runs that copy too, so it starts as plain node instead of paying tsx's loader on every import. Run
// directly (node --import tsx file.test.ts), a test starts its children through tsx as before.
import {join, relative, sep} from 'node:path'
import {fileURLToPath} from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
// The run's copy, test/fixtures/tmp/js-<pid of test/run.mjs>, when this test runs from one.
const TMP = join(ROOT, 'test', 'fixtures', 'tmp') + sep
const copyName = (process.argv[1] ?? '').startsWith(TMP) ? (process.argv[1] as string).slice(TMP.length).split(sep)[0] : ''
const COPY = /^js-\d+$/.test(copyName) ? TMP + copyName : undefined
const fromCopy = COPY !== undefined

/** The file to import for a .ts file of the repository: its JavaScript copy when this test runs from the copy. */
export function moduleFor(tsFile: string): string {
  return COPY !== undefined ? join(COPY, relative(ROOT, tsFile)).replace(/\.ts$/, '.js') : tsFile
}

/** The extension of a script written at run time that imports modules given by `moduleFor`. */
export const SCRIPT_EXT = fromCopy ? '.mjs' : '.mts'

/** Node's arguments that run `file` (a .ts file of the repository, or a script written with SCRIPT_EXT). */
export function nodeArgs(file: string): string[] {
  const target = file.endsWith('.ts') ? moduleFor(file) : file
  return /\.m?ts$/.test(target) ? ['--import', import.meta.resolve('tsx'), target] : [target]
}
