// Replaces dist/lib/typebox.js (tsc's `export * from 'typebox'`) with TypeBox bundled into that one module, so that
// a command loads one file instead of TypeBox's 374 (src/lib/typebox.ts says why). Run by `npm run build` after tsc.
import {readFileSync} from 'node:fs'

import {build} from 'esbuild'

const root = new URL('..', import.meta.url).pathname
const {version} = JSON.parse(readFileSync(`${root}node_modules/typebox/package.json`, 'utf8'))
// TypeBox's notice travels with its code; the package (a dependency) keeps its own license file beside.
const notice = readFileSync(`${root}node_modules/typebox/license`, 'utf8').trim()
await build({
  stdin: {contents: "export * from 'typebox'", resolveDir: root},
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  outfile: `${root}dist/lib/typebox.js`,
  allowOverwrite: true,
  banner: {js: `/*! TypeBox ${version}, bundled by scripts/bundle-typebox.mjs.\n\n${notice}\n*/`},
  logLevel: 'error',
})
