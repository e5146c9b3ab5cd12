/**
 * The paths the server lists and the methods each answers (a path template such as `/v1/jobs/{id}` included): what
 * 405 answers, CORS preflights and the metric labels read.
 */
export interface PathTable {
  /** Lists `method` on `path`. */
  allow(method: string, path: string): void
  /** The methods of a listed path, matched exactly (no template). */
  listed(path: string): string[] | undefined
  /** The methods a listed path allows, path templates included. */
  methodsOn(path: string): string[] | undefined
  /**
   * A request's metric labels, from closed sets so that what clients send cannot grow /metrics: the route pattern
   * (not the raw path) or `other`, and a method that route answers (or OPTIONS), else `other`.
   */
  labels(method: string | undefined, path: string): {method: string; route: string}
}

export function createPathTable(): PathTable {
  const known = new Map<string, string[]>()
  const routeOf = (path: string) => templateOf(known, path) ?? (path.startsWith('/docs/') ? '/docs/*' : 'other')
  const answers = (route: string, method: string) => (route === '/docs/*' ? ['GET', 'HEAD'] : (known.get(route) ?? [])).includes(method)
  return {
    allow: (method, path) => known.set(path, [...(known.get(path) ?? []), method]),
    listed: (path) => known.get(path),
    methodsOn: (path) => {
      const template = templateOf(known, path)
      return template === undefined ? undefined : known.get(template)
    },
    labels: (method = '', path) => {
      const route = routeOf(path)
      return {route, method: method === 'OPTIONS' || answers(route, method) ? method : 'other'}
    },
  }
}

/** The listed path (or path template, `/v1/jobs/{id}`) that `path` is, if any. */
function templateOf(known: Map<string, string[]>, path: string): string | undefined {
  if (known.has(path)) return path
  const parts = path.split('/')
  for (const template of known.keys()) {
    const t = template.split('/')
    if (t.length === parts.length && t.every((seg, i) => (/^\{\w+\}$/.test(seg) ? parts[i] !== '' : seg === parts[i]))) return template
  }
  return undefined
}
