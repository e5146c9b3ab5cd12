/**
 * Trained heads (--head / MOD_HEAD): a linear or logistic layer on the image embedding, trained by the user
 * for one model. The file format (docs/head-format.md):
 *
 *   {
 *     "format": "mod-head",            // required, exactly this
 *     "version": 1,                    // required, exactly 1
 *     "model_id": "<manifest id>",     // required: the model the head was trained on
 *     "embedding_size": 512,           // required: that model's embedding size
 *     "activation": "sigmoid",         // "sigmoid" (logistic regression) or "none" (linear, clamped to [0, 1])
 *     "description": "…",              // optional free text
 *     "labels": [{                     // at least one
 *       "name": "fireworks",           // unique; letters, digits, "_", "-", "."
 *       "parent": null,                // optional: another head label or a policy category
 *       "threshold": 0.5,              // optional, default 0.5
 *       "weights": [ … ],              // embedding_size finite numbers
 *       "bias": 0,                     // finite number
 *       "blend": 0.5                   // optional, in [0, 1], default 0.5
 *     }]
 *   }
 *
 * score = activation(weights · x + bias), where x is the L2-normalised image embedding. A label whose name
 * is a category of the active policy blends with it: score = (1 − blend) · category + blend · head, and
 * keeps the category's threshold, parent and origin (those belong to the policy file). Any other label is
 * added with origin "head", its own threshold and parent.
 */
import {readConfigText} from '../../config-file.js'
import {ModError, problemsError} from '../../errors.js'
import {CATEGORY_NAME_PATTERN, CATEGORY_NAME_RULE} from '../../names.js'
import {parentCycles} from '../../policy/parents.js'
import type {Policy} from '../../policy/types.js'
import {sigmoid} from '../../scoring/calibrate.js'
import type {ScoredLabel} from '../../scoring/result.js'
import {l2Normalised, linearLogit} from '../../scoring/vector.js'

export type HeadActivation = 'sigmoid' | 'none'

export interface HeadLabel {
  name: string
  parent: string | null
  threshold: number
  weights: Float64Array
  bias: number
  blend: number
}

export interface Head {
  model_id: string
  embedding_size: number
  activation: HeadActivation
  description?: string
  labels: HeadLabel[]
}

/** 4096 labels of a 1024-wide model written as JSON stay well under this. */
export const MAX_HEAD_BYTES = 256 * 1024 * 1024

const TOP_KEYS = ['format', 'version', 'model_id', 'embedding_size', 'activation', 'description', 'labels']
const LABEL_KEYS = ['name', 'parent', 'threshold', 'weights', 'bias', 'blend']
const DEFAULT_HEAD_THRESHOLD = 0.5
const DEFAULT_BLEND = 0.5

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)
const inUnit = (v: unknown): v is number => isFiniteNumber(v) && v >= 0 && v <= 1

function invalid(source: string, problems: string[]): ModError {
  return problemsError('invalid_config', `invalid head file ${source}`, problems, {problems})
}

function readLabel(raw: unknown, i: number, size: number | undefined, problems: string[]): HeadLabel | undefined {
  const at = `labels[${i}]`
  if (!isRecord(raw)) {
    problems.push(`${at} must be an object`)
    return undefined
  }
  const before = problems.length
  for (const key of Object.keys(raw)) {
    if (!LABEL_KEYS.includes(key)) problems.push(`${at}: unknown key "${key}" (expected one of ${LABEL_KEYS.join(', ')})`)
  }
  const {name, parent = null, threshold = DEFAULT_HEAD_THRESHOLD, weights, bias, blend = DEFAULT_BLEND} = raw
  if (typeof name !== 'string' || !CATEGORY_NAME_PATTERN.test(name)) {
    problems.push(`${at}.name ${CATEGORY_NAME_RULE}`)
  }
  if (parent !== null && (typeof parent !== 'string' || parent === '')) problems.push(`${at}.parent must be a name or null`)
  if (!inUnit(threshold)) problems.push(`${at}.threshold must be a number from 0 to 1`)
  if (!inUnit(blend)) problems.push(`${at}.blend must be a number from 0 to 1`)
  if (!isFiniteNumber(bias)) problems.push(`${at}.bias must be a number`)
  if (!Array.isArray(weights) || !weights.every(isFiniteNumber)) {
    problems.push(`${at}.weights must be a list of numbers`)
  } else if (size !== undefined && weights.length !== size) {
    problems.push(`${at}.weights has ${weights.length} numbers, embedding_size is ${size}`)
  }
  if (problems.length > before) return undefined
  return {
    name: name as string,
    parent: parent as string | null,
    threshold: threshold as number,
    weights: Float64Array.from(weights as number[]),
    bias: bias as number,
    blend: blend as number,
  }
}

/** Validates a head file's JSON text, reporting every problem at once. `source` names it in messages. */
export function parseHead(text: string, source: string): Head {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    throw invalid(source, [`not valid JSON: ${(e as Error).message}`])
  }
  if (!isRecord(json)) throw invalid(source, ['the file must hold a JSON object'])
  const problems: string[] = []
  for (const key of Object.keys(json)) {
    if (!TOP_KEYS.includes(key)) problems.push(`unknown key "${key}" (expected one of ${TOP_KEYS.join(', ')})`)
  }
  const {format, version, model_id, embedding_size, activation, description, labels} = json
  if (format !== 'mod-head') problems.push('format must be "mod-head"')
  if (version !== 1) problems.push(`version must be 1 (this mod reads version 1 heads)`)
  if (typeof model_id !== 'string' || model_id === '') problems.push('model_id must be the id of the model the head was trained for')
  const size = Number.isInteger(embedding_size) && (embedding_size as number) > 0 ? (embedding_size as number) : undefined
  if (size === undefined) problems.push('embedding_size must be a positive integer')
  if (activation !== 'sigmoid' && activation !== 'none') problems.push('activation must be "sigmoid" or "none"')
  if (description !== undefined && typeof description !== 'string') problems.push('description must be text')
  const read: HeadLabel[] = []
  if (!Array.isArray(labels) || labels.length === 0) {
    problems.push('labels must be a list of at least one label')
  } else {
    labels.forEach((raw, i) => {
      const label = readLabel(raw, i, size, problems)
      if (label === undefined) return
      if (read.some((l) => l.name === label.name)) problems.push(`labels[${i}]: the name "${label.name}" is used twice`)
      read.push(label)
    })
    for (const cycle of headCycles(read)) problems.push(cycle)
  }
  if (problems.length > 0) throw invalid(source, problems)
  return {
    model_id: model_id as string,
    embedding_size: size as number,
    activation: activation as HeadActivation,
    ...(description === undefined ? {} : {description: description as string}),
    labels: read,
  }
}

/** Parents among the head's own labels must not loop. */
function headCycles(labels: HeadLabel[]): string[] {
  const cycles = parentCycles(new Map(labels.map((l) => [l.name, l.parent])))
  return cycles.map((cycle) => `a cycle of parents: ${[...cycle, cycle[0]].join(' → ')}`)
}

/** Reads and validates a head file (see the format above). */
export async function loadHead(filePath: string): Promise<Head> {
  return parseHead(await readConfigText(filePath, 'head file', MAX_HEAD_BYTES), filePath)
}

/** Refuses a head trained for another model or embedding size: its weights would mean nothing here. */
export function checkHeadFits(head: Head, modelId: string, embeddingSize: number): void {
  const problems: string[] = []
  if (head.model_id !== modelId) problems.push(`it was trained for the model "${head.model_id}", the model in use is "${modelId}"`)
  if (head.embedding_size !== embeddingSize) {
    problems.push(`it expects embeddings of size ${head.embedding_size}, the model "${modelId}" gives ${embeddingSize}`)
  }
  if (problems.length > 0) throw new ModError('invalid_config', `the head does not fit this model: ${problems.join('; ')}`)
}

/**
 * A head-only label's parent must be another head label or a category of the active policy. (A label that
 * blends with a category takes the category's parent, so its own is not checked.)
 */
export function checkHeadParents(head: Head, policy: Policy): void {
  const categories = new Set(policy.categories.map((c) => c.name))
  const known = new Set([...categories, ...head.labels.map((l) => l.name)])
  const problems = head.labels
    .filter((l) => !categories.has(l.name) && l.parent !== null && !known.has(l.parent))
    .map((l) => `"${l.name}" has the parent "${l.parent}", which is neither a head label nor a category`)
  if (problems.length > 0) throw new ModError('invalid_config', `the head does not fit the policy: ${problems.join('; ')}`)
}

/** A label's logit on the normalised embedding `x` (the raw score calibrate and eval read). */
export function headLogit(label: HeadLabel, x: Float64Array): number {
  return linearLogit(label.weights, label.bias, x)
}

function headScore(label: HeadLabel, activation: HeadActivation, x: Float64Array): number {
  const z = headLogit(label, x)
  return activation === 'sigmoid' ? sigmoid(z) : Math.min(1, Math.max(0, z))
}

/** The policy's labels with the head applied: shared names blended, the head's other labels appended. */
export function applyHead(head: Head, image: Float32Array, labels: readonly ScoredLabel[]): ScoredLabel[] {
  if (image.length !== head.embedding_size) {
    throw new ModError('internal', `the head expects embeddings of size ${head.embedding_size}, got ${image.length}`)
  }
  const x = l2Normalised(image)
  const byName = new Map(head.labels.map((l) => [l.name, l]))
  const blended = labels.map((label) => {
    const h = byName.get(label.name)
    if (h === undefined) return label
    return {...label, score: (1 - h.blend) * label.score + h.blend * headScore(h, head.activation, x)}
  })
  const taken = new Set(labels.map((l) => l.name))
  const added = head.labels
    .filter((h) => !taken.has(h.name))
    .map((h): ScoredLabel => ({name: h.name, score: headScore(h, head.activation, x), threshold: h.threshold, parent: h.parent, origin: 'head'}))
  return [...blended, ...added]
}
