/**
 * An AVIF's colour as browsers show it, where libvips keeps the decoded values: the `nclx` colour box of its primary
 * item names primaries and a transfer by H.273 code points (cicp.ts), which libvips ignores (it applies an ICC
 * profile only). So a Display P3 photo came out dull and an HDR one (PQ, HLG) washed-out grey. The box's matrix and
 * range are the decoder's business (libheif applies them to give RGB). An item with an ICC profile too is left to
 * libvips, as browsers let the profile win.
 *
 * The boxes read (ISO/IEC 14496-12 and 23008-12): `meta` (a full box) holding `pitm` (the primary item's id) and
 * `iprp`, which holds `ipco` (the properties, numbered from 1 in order) and `ipma` (which properties each item has).
 */
import {BT709_AS_DISPLAYED, cicpColour, type CicpColour} from './cicp.js'

interface Box {
  type: string
  /** Where the box's content starts and ends in the file. */
  start: number
  end: number
}

/** The boxes from `start` to `end`; stops at the first that does not fit. */
function boxes(file: Buffer, start: number, end: number): Box[] {
  const found: Box[] = []
  for (let at = start; at + 8 <= end; ) {
    let size = file.readUInt32BE(at)
    let header = 8
    if (size === 1) {
      if (at + 16 > end) break
      size = Number(file.readBigUInt64BE(at + 8))
      header = 16
    } else if (size === 0) size = end - at
    if (size < header || at + size > end) break
    found.push({type: file.toString('latin1', at + 4, at + 8), start: at + header, end: at + size})
    at += size
  }
  return found
}

const child = (file: Buffer, parent: Box, type: string, skip = 0): Box | undefined => boxes(file, parent.start + skip, parent.end).find((b) => b.type === type)

/** The property numbers (from 1) `ipma` gives the item `id`. */
function propertiesOf(file: Buffer, ipma: Box, id: number): number[] {
  if (ipma.end - ipma.start < 8) return []
  const version = file[ipma.start]
  const wide = (file.readUInt32BE(ipma.start) & 1) === 1
  let at = ipma.start + 4
  const count = file.readUInt32BE(at)
  at += 4
  for (let i = 0; i < count; i++) {
    const idBytes = version < 1 ? 2 : 4
    if (at + idBytes + 1 > ipma.end) return []
    const item = version < 1 ? file.readUInt16BE(at) : file.readUInt32BE(at)
    const n = file[at + idBytes]
    at += idBytes + 1
    const size = wide ? 2 : 1
    if (at + n * size > ipma.end) return []
    const numbers = Array.from({length: n}, (_, k) => (wide ? file.readUInt16BE(at + 2 * k) & 0x7fff : file[at + k] & 0x7f))
    if (item === id) return numbers
    at += n * size
  }
  return []
}

/** The nclx code points [primaries, transfer] of the primary item, unless it has an ICC profile; undefined without. */
export function avifNclx(file: Buffer): [number, number] | undefined {
  const meta = boxes(file, 0, file.length).find((b) => b.type === 'meta')
  if (!meta) return undefined
  // `meta`, `pitm` and `ipma` are full boxes: a version byte and three bytes of flags first.
  const pitm = child(file, meta, 'pitm', 4)
  const iprp = child(file, meta, 'iprp', 4)
  const ipco = iprp && child(file, iprp, 'ipco')
  const ipma = iprp && child(file, iprp, 'ipma')
  if (!pitm || !ipco || !ipma || pitm.end - pitm.start < 6) return undefined
  const primary = file[pitm.start] === 0 ? file.readUInt16BE(pitm.start + 4) : file.readUInt32BE(pitm.start + 4)
  const properties = boxes(file, ipco.start, ipco.end)
  const colours = propertiesOf(file, ipma, primary)
    .map((n) => properties[n - 1])
    .filter((b): b is Box => b?.type === 'colr' && b.end - b.start >= 4)
  const kinds = colours.map((b) => file.toString('latin1', b.start, b.start + 4))
  if (kinds.includes('prof') || kinds.includes('rICC')) return undefined
  const nclx = colours.find((_, k) => kinds[k] === 'nclx')
  if (!nclx || nclx.end - nclx.start < 10) return undefined
  return [file.readUInt16BE(nclx.start + 4), file.readUInt16BE(nclx.start + 6)]
}

/** What decoding does with the AVIF's colour: undefined to keep what libvips gives (module comment). */
export function avifColour(file: Buffer): CicpColour | undefined {
  const nclx = avifNclx(file)
  return nclx && cicpColour(nclx[0], nclx[1], "the AVIF image's colour box (nclx)", BT709_AS_DISPLAYED.avif)
}
