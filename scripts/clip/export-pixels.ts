/**
 * Writes the images CLIP's preprocessing is compared on (scripts/clip/reference-images.ts), as mod decodes or makes
 * them, to a folder: one lossless PNG each and manifest.json (name, width, height, PNG file, sha256 of the RGB
 * bytes). scripts/clip/record-pillow-reference.py preprocesses them with Pillow.
 *
 *   npx tsx scripts/clip/export-pixels.ts /tmp/clip-pixels
 */
import {createHash} from 'node:crypto'
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import sharp from 'sharp'

import {referenceImages} from './reference-images.js'

const dir = process.argv[2]
if (!dir) throw new Error('usage: tsx scripts/clip/export-pixels.ts <folder>')
await mkdir(dir, {recursive: true})
const manifest = []
for (const [i, {name, image}] of (await referenceImages()).entries()) {
  const png = `${String(i).padStart(2, '0')}.png`
  await sharp(image.data, {raw: {width: image.width, height: image.height, channels: 3}}).png().toFile(join(dir, png))
  const sha256 = createHash('sha256').update(image.data).digest('hex')
  manifest.push({name, width: image.width, height: image.height, png, sha256})
}
await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 1))
process.stdout.write(`${manifest.length} images in ${dir}\n`)
