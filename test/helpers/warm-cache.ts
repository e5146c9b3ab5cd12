// A fresh MOD_CACHE_DIR still starts with the optimised graphs of the models every scan opens (the NSFW specialist,
// the toy CLIP model) and the toy model's prompt embeddings: building the specialist's graph costs about 0.3 CPU-s
// per process, and embedding prompts loads the CLIP tokenizer and text encoder (about 0.3 more), which tests about
// something else need not pay each time. test/run.mjs builds them once per run with a real scan, in a folder it names in
// TEST_WARM_CACHE;
// `warmCacheDir` hard-links them into a test's own folder (under its TMPDIR, which the runner keeps on the same file
// system), where the test's runs use, replace or remove them as any cache entry. Run by hand without that folder, a test starts cold, as before. Tests about the graph cache itself
// make their folders without this.
import {linkSync, mkdirSync, readdirSync} from 'node:fs'
import {join} from 'node:path'

const WARM_CACHE = process.env.TEST_WARM_CACHE

/** The entries (folders) of one part of the prepared cache; none when the run prepared nothing. */
function entriesOf(part: string): string[] {
  if (WARM_CACHE === undefined) return []
  try {
    return readdirSync(join(WARM_CACHE, part)).filter((name) => !name.includes('.tmp-'))
  } catch {
    return []
  }
}

/**
 * Makes `path` a cache folder holding links to the run's prepared graphs and prompt embeddings (when there are
 * any); returns `path`.
 */
export function warmCacheDir(path: string): string {
  mkdirSync(path, {recursive: true})
  for (const part of ['ort', 'prompts']) {
    for (const entry of entriesOf(part)) {
      mkdirSync(join(path, part, entry), {recursive: true})
      for (const file of readdirSync(join(WARM_CACHE as string, part, entry))) {
        try {
          linkSync(join(WARM_CACHE as string, part, entry, file), join(path, part, entry, file))
        } catch (e) {
          // Linked by an earlier call for the same folder.
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
        }
      }
    }
  }
  return path
}
