/** Why a file could not be read or written, in words, from the errno code Node gives (the code kept in brackets for searches). */
const WORDS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'a loop of symbolic links',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  ENAMETOOLONG: 'the name is too long',
  EIO: 'an input/output error of the disk',
  ENXIO: 'no such device',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files on the system',
  ENOMEM: 'out of memory',
  EROFS: 'a read-only file system',
  ENOSPC: 'the disk is full',
  EFBIG: 'larger than a file may be here',
}

export function whyUnreadable(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code
  if (code === undefined) return e instanceof Error ? e.message : 'error'
  const words = WORDS[code]
  return words === undefined ? code : `${words} (${code})`
}
