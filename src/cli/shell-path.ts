/**
 * A path as a POSIX shell reads it back, for a command line printed to be copied: as it is when it holds nothing the
 * shell interprets, else in single quotes (a name with a space, a quote or a `$`); one that starts with `-` gets `./`
 * before it, so that the command does not take it for a flag.
 */
export function shellPath(path: string): string {
  const word = path.startsWith('-') ? `./${path}` : path
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}
