// Replaces dist/lib/typebox.js (tsc's `export * from 'typebox'`) with TypeBox bundled into that one module, so that
// a command loads one file instead of TypeBox's 374 (src/lib/typebox.ts says why). Run by `npm run build` after tsc;
// test/run.mjs does the same to its JavaScript copy of the sources.
import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

import {build} from 'esbuild'

const root = fileURLToPath(new URL('..', import.meta.url))

/** Writes TypeBox, bundled into one ES module headed by its MIT notice, to `outfile`. */
export async function bundleTypebox(outfile) {
  const {version} = JSON.parse(readFileSync(`${root}node_modules/typebox/package.json`, 'utf8'))
  // TypeBox's notice travels with its code; the package (a dependency) keeps its own license file beside.
  const notice = readFileSync(`${root}node_modules/typebox/license`, 'utf8').trim()
  await build({
    stdin: {contents: "export * from 'typebox'", resolveDir: root},
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    outfile,
    allowOverwrite: true,
    banner: {js: `/*! TypeBox ${version}, bundled by scripts/bundle-typebox.mjs.\n\n${notice}\n*/`},
    logLevel: 'error',
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await bundleTypebox(`${root}dist/lib/typebox.js`)
