/**
 * Compiles src/lib/signals/pdq/kernels.wat (WebAssembly text) into kernels-wasm.ts, the module's bytes in base64,
 * so that the library loads it like any other module (no file to find at run time, nothing to copy into dist/).
 * Run after editing the .wat: `npx tsx scripts/pdq/wasm.ts`; test/lib/signals/pdq/wasm.test.ts fails when the
 * two disagree.
 */
import {readFile, writeFile} from 'node:fs/promises'
import {fileURLToPath, pathToFileURL} from 'node:url'

import wabt from 'wabt'

const SOURCE = fileURLToPath(new URL('../../src/lib/signals/pdq/kernels.wat', import.meta.url))
export const TARGET = fileURLToPath(new URL('../../src/lib/signals/pdq/kernels-wasm.ts', import.meta.url))

/** The TypeScript module holding the compiled .wat. */
export async function compiledModule(): Promise<string> {
  const text = await readFile(SOURCE, 'utf8')
  const module = (await wabt()).parseWat('kernels.wat', text, {simd: true})
  try {
    module.validate()
    const {buffer} = module.toBinary({})
    const base64 = Buffer.from(buffer).toString('base64')
    const lines = base64.match(/.{1,100}/g) ?? []
    return [
      '// Generated from kernels.wat by scripts/pdq/wasm.ts: edit the .wat and run `npx tsx scripts/pdq/wasm.ts`.',
      'export const KERNELS_WASM = Buffer.from(',
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
  await writeFile(TARGET, await compiledModule())
  process.stdout.write(`wrote ${TARGET}\n`)
}
