// Animations of many pictures, for the frames an animation is scored on.
import sharp from 'sharp'

/** A lossless animated WebP of `count` 16 x 16 frames, each shown 500 ms, each a seeded pattern of black and white 2 x 2 blocks: all other pictures. */
export async function slideshowWebp(count: number): Promise<Buffer> {
  let seed = 7
  const bit = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) >> 16) & 1
  const frames = Array.from({length: count}, () => {
    const blocks = Array.from({length: 64}, () => 255 * bit())
    return Buffer.from(Array.from({length: 256}, (_, i) => blocks[Math.floor(i / 32) * 8 + Math.floor((i % 16) / 2)]))
  })
  return sharp(Buffer.concat(frames), {raw: {width: 16, height: 16 * count, channels: 1, pageHeight: 16}})
    .webp({lossless: true, delay: frames.map(() => 500)})
    .toBuffer()
}
