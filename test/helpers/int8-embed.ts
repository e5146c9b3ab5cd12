// `node test/helpers/int8-embed.ts <job.json>`: embeds images with a model folder's int8 image encoder as the
// CLIP runner opens it, once per run of the job, and prints one JSON object: what `auto` picks here and, per run,
// the embeddings and the files in its cache's int8 folder afterwards. Run under `qemu-x86_64 -cpu Haswell` it
// answers for an AVX2 CPU without VNNI (one process for every run: starting Node under the emulator is slow).
// The job: {modelDir, pixels: <file of float32>, count, runs: [{int8Weights: 'auto' | 'signed' | 'unsigned', cacheDir}]}.
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {chooseInt8Weights} from '../../src/lib/model/int8-weights.js'
import {loadManifest} from '../../src/lib/model/manifest.js'
import type {Int8Weights} from '../../src/lib/model/manifest-types.js'
import {openClip} from '../../src/lib/signals/clip/model.js'

interface Job {
  modelDir: string
  pixels: string
  count: number
  runs: {int8Weights: Int8Weights; cacheDir: string}[]
}

const job = JSON.parse(await readFile(process.argv[2] as string, 'utf8')) as Job
const bytes = await readFile(job.pixels)
const pixels = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
const manifest = await loadManifest(job.modelDir, undefined, 'int8')
const runs = []
for (const {int8Weights, cacheDir} of job.runs) {
  const clip = await openClip(job.modelDir, manifest, {threads: 1, cacheDir, int8Weights})
  const embeddings = (await clip.embedImages(pixels, job.count)).map((e) => Array.from(e))
  await clip.close()
  runs.push({embeddings, cacheFiles: await readdir(join(cacheDir, 'int8')).catch(() => [])})
}
process.stdout.write(JSON.stringify({auto: await chooseInt8Weights('auto'), runs}))
