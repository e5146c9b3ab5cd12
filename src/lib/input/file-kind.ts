import type {Stats} from 'node:fs'

/** What a path that is not a regular file is, in words for a message: "a FIFO", "a device", "a socket". */
export function fileKind(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO'
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device'
  if (info.isSocket()) return 'a socket'
  return 'not a regular file'
}
