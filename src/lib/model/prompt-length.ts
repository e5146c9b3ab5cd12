/** Which prompts of a policy are longer than a text encoder's context, and so are truncated before encoding. */
import {join} from 'node:path'

import type {Policy, PresetName} from '../policy/types.js'
import {loadPresetManifest, MODELS_DIR_PATH} from './presets.js'
import {loadTokenizer, type ClipTokenizer} from './tokenizer.js'

export interface LongPrompt {
  /** The category the prompt belongs to, or null for the shared neutral prompts. */
  category: string | null
  kind: 'prompt' | 'negative' | 'neutral'
  text: string
}

/** Every prompt, negative and neutral prompt whose tokens (start and end included) exceed contextLength. */
export function longPrompts(policy: Policy, tokenizer: ClipTokenizer, contextLength: number): LongPrompt[] {
  const long: LongPrompt[] = []
  const check = (category: string | null, kind: LongPrompt['kind'], texts: readonly string[]): void => {
    for (const text of texts) if (tokenizer.exceeds(text, contextLength)) long.push({category, kind, text})
  }
  for (const c of policy.categories) {
    check(c.name, 'prompt', c.prompts)
    check(c.name, 'negative', c.negatives)
  }
  check(null, 'neutral', policy.neutral)
  return long
}

/** The policy's long prompts for a preset: the CLIP tokenizer every preset shares, at the preset's context length. */
export async function longPresetPrompts(policy: Policy, preset: PresetName): Promise<{contextLength: number; prompts: LongPrompt[]}> {
  const manifest = await loadPresetManifest(preset)
  const tokenizer = await loadTokenizer(join(MODELS_DIR_PATH, 'clip-tokenizer'))
  return {contextLength: manifest.context_length, prompts: longPrompts(policy, tokenizer, manifest.context_length)}
}
