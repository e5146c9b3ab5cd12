/** The folder a model is installed into, made before anything is written there. */
import {whyUnreadable} from '../errno.js'
import {ModError} from '../errors.js'
import {makeDir} from '../make-dir.js'

/** Why a folder could not be made, in words: ENOENT there means the file system takes no new entry (procfs, a link to nowhere). */
function whyNotMade(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code
  return code === 'ENOENT' ? 'the file system refuses a new folder there (ENOENT)' : whyUnreadable(e)
}

/** Makes `dir` (a model folder under the cache folder, or its part folder); one that cannot be made is `invalid_config`, naming it and why. */
export async function makeInstallFolder(dir: string): Promise<void> {
  try {
    await makeDir(dir)
  } catch (e) {
    throw new ModError('invalid_config', `cannot make the folder ${dir}: ${whyNotMade(e)}; give MOD_CACHE_DIR (or --cache-dir) a folder mod can write`)
  }
}
