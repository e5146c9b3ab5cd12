/** A count with its noun in the right number: "1 frame", "0 frames", "12 frames" (`many` for irregular nouns). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`
}
