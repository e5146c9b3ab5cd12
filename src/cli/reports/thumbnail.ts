import sharp from 'sharp'

import {readFileCapped} from '../../lib/input/read-capped.js'

/** The longest side of a thumbnail in the HTML report, in pixels. */
export const THUMB_SIDE = 160

/** A small preview as a data URI, with the size of the image it shows (after EXIF rotation): the boxes' space. */
export interface Thumbnail {
  uri: string
  width: number
  height: number
}

/**
 * A WebP thumbnail of an image file (its first frame, EXIF rotation applied), or undefined when the file cannot be
 * read or decoded again (changed since it was scanned): the report then shows the item without one. The limits are
 * the scan's, so a thumbnail never decodes more than scoring did.
 */
export async function thumbnail(path: string, limits: {maxBytes: number; maxPixels: number}): Promise<Thumbnail | undefined> {
  try {
    const bytes = await readFileCapped(path, limits.maxBytes)
    const meta = await sharp(bytes, {limitInputPixels: limits.maxPixels}).metadata()
    const upright = {width: meta.width, height: meta.pageHeight ?? meta.height}
    const turned = (meta.orientation ?? 1) >= 5
    const size = turned ? {width: upright.height, height: upright.width} : upright
    const data = await sharp(bytes, {limitInputPixels: limits.maxPixels})
      .rotate()
      .resize(THUMB_SIDE, THUMB_SIDE, {fit: 'inside', withoutEnlargement: true})
      .webp({quality: 60, effort: 2})
      .toBuffer()
    return {uri: `data:image/webp;base64,${data.toString('base64')}`, ...size}
  } catch {
    return undefined
  }
}

/** Thumbnails made at once: each decode waits on libuv threads, which more would only queue on. */
const AT_ONCE = 4

/** Each item with the thumbnail of its file (none for stdin and for items that could not be scanned). */
export async function withThumbnails<T extends {item: {source: string; error?: unknown}}>(
  items: readonly T[],
  limits: {maxBytes: number; maxPixels: number},
): Promise<(T & {thumb?: Thumbnail})[]> {
  const out: (T & {thumb?: Thumbnail})[] = []
  for (let i = 0; i < items.length; i += AT_ONCE) {
    const group = items.slice(i, i + AT_ONCE)
    const thumbs = await Promise.all(group.map((x) => (x.item.source === '-' || 'error' in x.item ? undefined : thumbnail(x.item.source, limits))))
    group.forEach((x, j) => out.push(thumbs[j] ? {...x, thumb: thumbs[j]} : x))
  }
  return out
}
