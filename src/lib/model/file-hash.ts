/** A model file's size and SHA-256, read as a stream: how a pulled or installed file is checked against its manifest. */
import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'

export interface Verified {
  size: number
  /** Lower-case hex. */
  sha256: string
}

export async function hashFile(path: string): Promise<Verified> {
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  return {size, sha256: hash.digest('hex')}
}
