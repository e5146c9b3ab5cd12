/**
 * mod and transformers.js read the same model folder and must agree: image embeddings of the same pixels (our
 * encoder run), of the same encoded images where no resize happens (our decoding, crop and normalisation), token
 * ids and text embeddings of the same prompts (our tokenizer and text path). The resize itself is not
 * transformers.js's: mod follows Pillow's antialiased bicubic, as OpenAI CLIP was trained, where transformers.js
 * in Node samples without a filter; test/lib/image/clip-pillow.test.ts compares it with Pillow. Checked on the
 * toy model (whose image embedding is a channel mean, so images with different halves and shapes exercise the
 * crop) and on a small random-weight CLIP of the real architecture, where every default prompt has a meaningful
 * embedding. bench/peer.ts runs the same comparison on the full-size stand-in.
 */
import {mkdtemp, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {agreement, defaultPrompts, openMod, openPeer, tokenMismatches, type Agreement, type ModSide, type PeerSide} from '../bench/parity.js'
import {writeToyModel} from '../scripts/fixtures.js'
import {writeStandinModel} from '../scripts/standin.js'
import {cosine} from '../src/lib/signals/clip/zero-shot.js'

const AGREE = 0.999

type Rgb = [number, number, number]

/** Two colours split at a third of the width, a vertical gradient and a diagonal stripe: nothing a crop can leave unchanged. */
function pixels(width: number, height: number, left: Rgb, right: Rgb): Buffer {
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const base = x < width / 3 ? left : right
      const stripe = (x + y) % 40 < 6 ? 60 : 0
      for (let c = 0; c < 3; c++) data[3 * (y * width + x) + c] = Math.min(255, base[c] * (0.5 + (0.5 * y) / height) + stripe)
    }
  }
  return data
}

interface Sample {
  name: string
  bytes: Buffer
  /** Already at CLIP's size (shorter side 224): no resize, so transformers.js's whole path must agree too. */
  unresized: boolean
}

async function samples(): Promise<Sample[]> {
  const specs: [number, number, Rgb, Rgb, 'jpeg' | 'png' | 'webp'][] = [
    [1280, 720, [230, 40, 40], [30, 60, 220], 'jpeg'],
    [480, 640, [20, 200, 60], [240, 240, 20], 'png'],
    [333, 777, [250, 250, 250], [10, 10, 10], 'webp'],
    [225, 224, [0, 90, 255], [255, 120, 0], 'png'],
    [97, 61, [200, 30, 200], [40, 220, 220], 'jpeg'],
    [224, 224, [250, 200, 30], [20, 20, 120], 'jpeg'],
  ]
  return Promise.all(
    specs.map(async ([w, h, left, right, format]) => {
      const img = sharp(pixels(w, h, left, right), {raw: {width: w, height: h, channels: 3}})
      const bytes = await (format === 'jpeg' ? img.jpeg({quality: 90}) : format === 'png' ? img.png() : img.webp({quality: 90})).toBuffer()
      return {name: `${w}x${h} ${format}`, bytes, unresized: Math.min(w, h) === 224}
    }),
  )
}

/** mod's embeddings, and transformers.js's vision tower on mod's pixels. */
async function imageEmbeddings(mod: ModSide, peer: PeerSide, images: Sample[]): Promise<{ours: Float32Array[]; theirs: Float32Array[]}> {
  const ours: Float32Array[] = []
  const theirs: Float32Array[] = []
  for (const s of images) {
    ours.push(await mod.embedImage(s.bytes))
    theirs.push(await peer.embedPixels(await mod.pixels(s.bytes), mod.manifest.preprocess.crop))
  }
  return {ours, theirs}
}

/** Where no resize happens, transformers.js's whole path (its decoding and CLIPImageProcessor) against mod's. */
async function unresizedAgreement(mod: ModSide, peer: PeerSide, images: Sample[]): Promise<Agreement> {
  const unresized = images.filter((s) => s.unresized)
  assert.equal(unresized.length, 2)
  const ours: Float32Array[] = []
  const theirs: Float32Array[] = []
  for (const s of unresized) {
    ours.push(await mod.embedImage(s.bytes))
    theirs.push(await peer.embedImage(s.bytes))
  }
  return agreement(unresized.map((s) => s.name), ours, theirs)
}

const root = await mkdtemp(join(tmpdir(), 'mod-parity-'))
const images = await samples()
const prompts = defaultPrompts()

test('toy model: image embeddings agree with transformers.js on mod\'s pixels of every image, and whole paths where no resize happens', async () => {
  const dir = join(root, 'toy')
  await writeToyModel(dir)
  const mod = await openMod(dir, 1)
  const peer = await openPeer(dir, mod.manifest.context_length)
  try {
    const {ours, theirs} = await imageEmbeddings(mod, peer, images)
    const a = agreement(images.map((s) => s.name), ours, theirs)
    assert.ok(a.worst >= AGREE, `cosine ${a.worst} on ${a.worstItem}`)
    const whole = await unresizedAgreement(mod, peer, images)
    assert.ok(whole.worst >= AGREE, `cosine ${whole.worst} on ${whole.worstItem}`)
    // The images differ enough that a wrong crop or channel order would show.
    assert.ok(cosine(ours[0], ours[1]) < 0.9, 'two different images embed apart')
  } finally {
    await mod.close()
    await peer.close()
  }
})

test('toy model: token ids of every default prompt are identical, and colour prompts embed the same', async () => {
  const dir = join(root, 'toy')
  const mod = await openMod(dir, 1)
  const peer = await openPeer(dir, mod.manifest.context_length)
  try {
    assert.equal(tokenMismatches(prompts, mod.tokenIds(prompts), peer.tokenIds(prompts)), [])
    // Default prompts are zero vectors on the toy (no colour words), so colour prompts check the text path here.
    const colours = ['red', 'a green and blue sky', 'Blue, blue, RED!', 'red green blue']
    const a = agreement(colours, await mod.clip.embedTexts(colours), await peer.embedTexts(colours))
    assert.ok(a.worst >= AGREE, `cosine ${a.worst} on "${a.worstItem}"`)
  } finally {
    await mod.close()
    await peer.close()
  }
})

const dir = join(root, 'tiny')
await writeStandinModel(dir, {
  variants: false,
  sizes: {
    vision: {imageSize: 224, patchSize: 32, width: 32, layers: 2, heads: 2, mlpWidth: 64, embeddingSize: 16},
    text: {vocabSize: 49408, contextLength: 77, width: 32, layers: 2, heads: 2, mlpWidth: 64, embeddingSize: 16},
  },
})
const tinyMod = await openMod(dir, 1)
const tinyPeer = await openPeer(dir, tinyMod.manifest.context_length)

test('small random CLIP: image embeddings agree with transformers.js on mod\'s pixels of every image, and whole paths where no resize happens', async () => {
  const {ours, theirs} = await imageEmbeddings(tinyMod, tinyPeer, images)
  const a = agreement(images.map((s) => s.name), ours, theirs)
  assert.ok(a.worst >= AGREE, `cosine ${a.worst} on ${a.worstItem}`)
  const whole = await unresizedAgreement(tinyMod, tinyPeer, images)
  assert.ok(whole.worst >= AGREE, `cosine ${whole.worst} on ${whole.worstItem}`)
  assert.ok(cosine(ours[0], ours[2]) < 0.99, 'two different images embed apart')
})

test('small random CLIP: every default prompt has the same token ids and text embedding as in transformers.js', async () => {
  assert.equal(tokenMismatches(prompts, tinyMod.tokenIds(prompts), tinyPeer.tokenIds(prompts)), [])
  const ours = await tinyMod.clip.embedTexts(prompts)
  const a = agreement(prompts, ours, await tinyPeer.embedTexts(prompts))
  assert.ok(a.worst >= AGREE, `cosine ${a.worst} on "${a.worstItem}"`)
  assert.ok(cosine(ours[0], ours[prompts.length - 1]) < 0.99, 'two different prompts embed apart')
})

test.after(async () => {
  await tinyMod.close()
  await tinyPeer.close()
  await rm(root, {recursive: true, force: true})
})

test.run()
