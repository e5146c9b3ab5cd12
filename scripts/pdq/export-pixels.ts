/**
 * Writes the pixels of the PDQ reference images (scripts/pdq/reference-images.ts), as mod decodes them, to
 * a folder: one raw RGB file each and manifest.json (name, width, height, raw file, source photo).
 * scripts/pdq/record-reference.py hashes them with the reference implementation.
 *
 *   npx tsx scripts/pdq/export-pixels.ts /tmp/pdq-pixels
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {join, relative} from 'node:path'

import {referenceImages} from './reference-images.js'

const dir = process.argv[2]
if (!dir) throw new Error('usage: tsx scripts/pdq/export-pixels.ts <folder>')
await mkdir(dir, {recursive: true})
const manifest = []
for (const [i, r] of (await referenceImages()).entries()) {
  const raw = `${String(i).padStart(2, '0')}.rgb`
  await writeFile(join(dir, raw), r.image.data)
  manifest.push({name: r.name, width: r.image.width, height: r.image.height, raw, file: r.file ? relative(process.cwd(), r.file) : undefined})
}
await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 1))
process.stdout.write(`${manifest.length} images in ${dir}\n`)
