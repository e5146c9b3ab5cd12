/**
 * Every cycle in a parent relation (categories of a policy, labels of a head), each reported once as the names
 * along it, starting where the walk entered it. A name whose parent is not in the map ends its chain.
 */
export function parentCycles(parentOf: ReadonlyMap<string, string | null>): string[][] {
  const done = new Set<string>()
  const cycles: string[][] = []
  for (const start of parentOf.keys()) {
    const trail: string[] = []
    const onTrail = new Set<string>()
    let current: string | null = start
    while (current !== null && parentOf.has(current) && !done.has(current) && !onTrail.has(current)) {
      trail.push(current)
      onTrail.add(current)
      current = parentOf.get(current) ?? null
    }
    if (current !== null && onTrail.has(current)) cycles.push(trail.slice(trail.indexOf(current)))
    for (const name of trail) done.add(name)
  }
  return cycles
}
