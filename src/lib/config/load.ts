import {stat} from 'node:fs/promises'
import {homedir} from 'node:os'
import {dirname, isAbsolute, join} from 'node:path'

import {isModError, ModError} from '../errors.js'
import {loadManifest, MANIFEST_FILE} from '../model/manifest.js'
import type {Precision} from '../model/manifest-types.js'
import {findPolicyFile} from '../policy/load.js'
import type {Policy, PresetName} from '../policy/types.js'
import {buildPolicy, loadPolicyFile} from './policy.js'
import {readSettings, type Env, type Settings, type SettingsInput} from './settings.js'

/** Everything a command or the server needs before it builds an engine. */
export interface Config {
  settings: Settings
  preset: PresetName
  policy: Policy
  policyPath?: string
  /**
   * Where the policy file was found by name, as a phrase (`from the current folder`, `in the user configuration
   * folder`); false when --config or MOD_CONFIG named it, or there is none.
   */
  policyFound: false | string
}

/** Typed input and MOD_* variables, then the policy file (named, or found by name from cwd); preset: input > MOD_PRESET > policy > fast. */
export async function loadConfig(input: SettingsInput, env: Env, cwd = process.cwd()): Promise<Config> {
  const settings = readSettings(input, env, cwd)
  const {engine} = settings
  if (engine.modelDir !== undefined) await checkModelDir(engine.modelDir, engine.precision)
  // A relative XDG_CONFIG_HOME is to be ignored, as the XDG base directory specification says (it is no folder).
  const xdg = env.XDG_CONFIG_HOME
  const configHome = xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.config')
  const policyPath = engine.configPath ?? (await findPolicyFile(cwd, {configHome}))
  const policy = policyPath ? (await loadPolicyFile(policyPath)).policy : buildPolicy()
  const found = policyPath === undefined || engine.configPath !== undefined ? false : dirname(policyPath) === join(configHome, 'mod') ? 'in the user configuration folder' : 'from the current folder'
  return {settings, preset: engine.preset ?? policy.preset ?? 'fast', policy, policyPath, policyFound: found}
}

/**
 * An explicit model folder that is missing, holds no model or lacks a file its manifest lists (for `precision`) says
 * so, rather than suggesting a preset download; every command refuses it, `mod categories` too.
 */
export async function checkModelDir(dir: string, precision: Precision = 'fp32'): Promise<void> {
  const what = `the model folder ${dir} (MOD_MODEL_DIR, --model-dir)`
  const info = await stat(dir).catch(() => undefined)
  if (!info) throw new ModError('model_missing', `${what} does not exist`, {dir})
  if (!info.isDirectory()) throw new ModError('model_missing', `${what} is not a folder`, {dir})
  const manifest = await stat(join(dir, MANIFEST_FILE)).catch(() => undefined)
  if (!manifest?.isFile()) {
    throw new ModError('model_missing', `${what} is not a model folder: it has no ${MANIFEST_FILE} (\`mod models pull\` makes one under the cache folder)`, {dir})
  }
  try {
    await loadManifest(dir, undefined, precision)
  } catch (e) {
    const file = isModError(e) && e.code === 'model_missing' ? e.context?.file : undefined
    if (typeof file !== 'string') throw e
    throw new ModError('model_missing', `${what} lacks ${file}, which its ${MANIFEST_FILE} lists: copy the whole model folder there again`, {dir, file})
  }
}
