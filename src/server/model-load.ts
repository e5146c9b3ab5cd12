import type {Engine} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import {describe, type Log} from './errors.js'

/**
 * Loading the model on first use (MOD_PRELOAD=false), for the moderation routes and /ready alike: each failed
 * attempt is logged with its cause, and /ready can tell a model that failed to load from one still loading.
 */
export interface ModelLoad {
  /** Loads the model, or joins the attempt under way; a failure is logged and thrown as model_unavailable. */
  ensure(log: Log): Promise<void>
  /** Whether the last attempt failed and none has started since. */
  failed(): boolean
}

export function modelLoad(engine: Engine): ModelLoad {
  let failed = false
  return {
    async ensure(log) {
      if (engine.isLoaded()) return
      failed = false
      try {
        await engine.load()
      } catch (e) {
        failed = true
        log(`model could not be loaded: ${describe(e)}`, 'error', {err: e})
        throw new ModError('model_unavailable', 'the model could not be loaded; try again later')
      }
    },
    failed: () => failed,
  }
}
