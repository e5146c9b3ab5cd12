/**
 * Compiles the repository's WebAssembly text modules into TypeScript modules holding their bytes in base64, so
 * that the library loads them like any other module (no file to find at run time, nothing to copy into dist/).
 * Run after editing a .wat: `npx tsx scripts/wasm.ts`; test/scripts/wasm.test.ts fails when a pair disagrees.
 */
import {readFile, writeFile} from 'node:fs/promises'
import {basename} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'

import wabt from 'wabt'

export interface WasmModule {
  /** The .wat file. */
  source: string
  /** The .ts file written from it. */
  target: string
  /** The name of the Buffer it exports. */
  name: string
}

const at = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url))

export const MODULES: WasmModule[] = [
  {source: at('src/lib/signals/pdq/kernels.wat'), target: at('src/lib/signals/pdq/kernels-wasm.ts'), name: 'KERNELS_WASM'},
  {source: at('src/lib/image/enlarge.wat'), target: at('src/lib/image/enlarge-wasm.ts'), name: 'ENLARGE_WASM'},
]

/** The TypeScript module holding the compiled .wat. */
export async function compiledModule(m: WasmModule): Promise<string> {
  const text = await readFile(m.source, 'utf8')
  const module = (await wabt()).parseWat(basename(m.source), text, {simd: true})
  try {
    module.validate()
    const {buffer} = module.toBinary({})
    const base64 = Buffer.from(buffer).toString('base64')
    const lines = base64.match(/.{1,100}/g) ?? []
    return [
      `// Generated from ${basename(m.source)} by scripts/wasm.ts: edit the .wat and run \`npx tsx scripts/wasm.ts\`.`,
      `export const ${m.name} = Buffer.from(`,
      ...lines.map((l, i) => `  '${l}'${i < lines.length - 1 ? ' +' : ','}`),
      "  'base64',",
      ')',
      '',
    ].join('\n')
  } finally {
    module.destroy()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const m of MODULES) {
    await writeFile(m.target, await compiledModule(m))
    process.stdout.write(`wrote ${m.target}\n`)
  }
}
