// Run by test/run.mjs (from its JavaScript copy) before the test files: scans the fixture photos with the toy model
// and a policy file, as `mod scan` would, so that the cache folder holds the optimised graphs of the models every
// scan opens and the prompt embeddings of the default categories and of the policy's. Arguments: cache folder, policy
// file, photos folder, model folder.
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {engineFromConfig} from '../src/lib/compose.js'
import {loadConfig} from '../src/lib/config/load.js'

const [cacheDir, config, photos, modelDir] = process.argv.slice(2)
const engine = engineFromConfig(await loadConfig({cacheDir, config, modelDir}, {}))
try {
  for (const name of (await readdir(photos)).sort()) {
    if (!/\.(jpe?g|png)$/i.test(name)) continue
    await engine.moderateImage(await readFile(join(photos, name)), name)
  }
} finally {
  await engine.close()
}
