// A fresh MOD_CACHE_DIR still starts with the optimised graphs of the models every scan opens (the NSFW specialist,
// the toy CLIP model): building the specialist's costs about 0.3 CPU-s per process, which tests about something else
// need not pay each time. test/run.mjs builds them once per run under test/fixtures/tmp/warm-cache with a real scan;
// `warmCacheDir` hard-links them into a test's own folder, where the test's runs use, replace or remove them as any
// cache entry. Run by hand without that folder, a test starts cold, as before. Tests about the graph cache itself
// make their folders without this.
import {linkSync, mkdirSync, readdirSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

export const WARM_CACHE = fileURLToPath(new URL('../fixtures/tmp/warm-cache', import.meta.url))

/** Makes `path` a cache folder holding links to the run's prepared graphs (when there are any); returns `path`. */
export function warmCacheDir(path: string): string {
  const from = join(WARM_CACHE, 'ort')
  let entries: string[] = []
  try {
    entries = readdirSync(from)
  } catch {
    // No prepared graphs: the test starts cold.
  }
  mkdirSync(path, {recursive: true})
  for (const entry of entries.filter((name) => !name.includes('.tmp-'))) {
    mkdirSync(join(path, 'ort', entry), {recursive: true})
    for (const file of readdirSync(join(from, entry))) {
      try {
        linkSync(join(from, entry, file), join(path, 'ort', entry, file))
      } catch (e) {
        // Linked by an earlier call for the same folder.
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      }
    }
  }
  return path
}
