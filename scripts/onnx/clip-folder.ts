/**
 * Writes a CLIP model folder in the Hugging Face ONNX export layout beside our
 * manifest.json: onnx/vision_model.onnx, onnx/text_model.onnx, the tokenizer files, config.json and
 * preprocessor_config.json, so that both `mod` and transformers.js load the same folder. Any pair of
 * encoders fits (the toy model, a random-weight ViT-B/32…); the caller gives the ONNX bytes and sizes.
 */
import {createHash} from 'node:crypto'
import {mkdir, readFile, rename, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import type {FileRole, Manifest, ModelFile, Preprocessing} from '../../src/lib/model/manifest-types.js'

const START_TOKEN = '<|startoftext|>'
const END_TOKEN = '<|endoftext|>'
/** OpenAI CLIP's image normalisation, which the Hugging Face exports carry too. */
export const CLIP_MEAN: [number, number, number] = [0.48145466, 0.4578275, 0.40821073]
export const CLIP_STD: [number, number, number] = [0.26862954, 0.26130258, 0.27577711]
/** PIL's code for bicubic resampling, as preprocessor_config.json spells it. */
const PIL_BICUBIC = 3

export interface ClipFolderSpec {
  id: string
  embeddingSize: number
  contextLength: number
  imageSize: number
  patchSize: number
  visionModel: Uint8Array
  textModel: Uint8Array
  /** A folder with the vocab.json and merges.txt to ship. */
  tokenizerDir: string
  /** Merged over config.json's text_config / vision_config (layer counts, hidden sizes…). */
  textConfig?: Record<string, unknown>
  visionConfig?: Record<string, unknown>
  /** The manifest's free-text provenance line. */
  source?: string
}

interface FolderFile {
  path: string
  role: FileRole
  bytes: Uint8Array
}

function json(value: unknown): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`)
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

function specialId(vocab: Record<string, number>, token: string): number {
  const id = vocab[token]
  if (id === undefined) throw new Error(`vocab.json lacks ${token}`)
  return id
}

function mergeLines(mergesTxt: string): string[] {
  return mergesTxt.split(/\r?\n/).filter((line, i) => line !== '' && !(i === 0 && line.startsWith('#version')))
}

/** The tokenizer.json Hugging Face's CLIPTokenizerFast saves for OpenAI's CLIP vocabulary. */
function tokenizerJson(vocab: Record<string, number>, merges: string[]): unknown {
  const special = (content: string) => ({
    id: specialId(vocab, content),
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: true,
    special: true,
  })
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [special(START_TOKEN), special(END_TOKEN)],
    normalizer: {
      type: 'Sequence',
      normalizers: [{type: 'NFC'}, {type: 'Replace', pattern: {Regex: '\\s+'}, content: ' '}, {type: 'Lowercase'}],
    },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        {
          type: 'Split',
          pattern: {
            Regex: "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+",
          },
          behavior: 'Removed',
          invert: true,
        },
        {type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false},
      ],
    },
    post_processor: {
      type: 'RobertaProcessing',
      sep: [END_TOKEN, specialId(vocab, END_TOKEN)],
      cls: [START_TOKEN, specialId(vocab, START_TOKEN)],
      trim_offsets: false,
      add_prefix_space: false,
    },
    decoder: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: END_TOKEN,
      continuing_subword_prefix: '',
      end_of_word_suffix: '</w>',
      fuse_unk: false,
      byte_fallback: false,
      vocab,
      merges,
    },
  }
}

function tokenizerConfig(contextLength: number): unknown {
  return {
    add_prefix_space: false,
    bos_token: START_TOKEN,
    clean_up_tokenization_spaces: true,
    do_lower_case: true,
    eos_token: END_TOKEN,
    errors: 'replace',
    model_max_length: contextLength,
    // Hugging Face's CLIP exports pad with the end token; `mod`'s tokenizer reads this too.
    pad_token: END_TOKEN,
    tokenizer_class: 'CLIPTokenizer',
    unk_token: END_TOKEN,
  }
}

function modelConfig(spec: ClipFolderSpec, vocab: Record<string, number>): unknown {
  return {
    _name_or_path: spec.id,
    architectures: ['CLIPModel'],
    model_type: 'clip',
    projection_dim: spec.embeddingSize,
    logit_scale_init_value: 2.6592,
    initializer_factor: 1.0,
    text_config: {
      model_type: 'clip_text_model',
      vocab_size: Object.keys(vocab).length,
      max_position_embeddings: spec.contextLength,
      projection_dim: spec.embeddingSize,
      bos_token_id: specialId(vocab, START_TOKEN),
      eos_token_id: specialId(vocab, END_TOKEN),
      pad_token_id: specialId(vocab, END_TOKEN),
      hidden_act: 'quick_gelu',
      ...spec.textConfig,
    },
    vision_config: {
      model_type: 'clip_vision_model',
      image_size: spec.imageSize,
      patch_size: spec.patchSize,
      num_channels: 3,
      projection_dim: spec.embeddingSize,
      hidden_act: 'quick_gelu',
      ...spec.visionConfig,
    },
  }
}

function preprocessorConfig(spec: ClipFolderSpec): unknown {
  return {
    crop_size: {height: spec.imageSize, width: spec.imageSize},
    do_center_crop: true,
    do_convert_rgb: true,
    do_normalize: true,
    do_rescale: true,
    do_resize: true,
    feature_extractor_type: 'CLIPFeatureExtractor',
    image_processor_type: 'CLIPImageProcessor',
    image_mean: CLIP_MEAN,
    image_std: CLIP_STD,
    processor_class: 'CLIPProcessor',
    resample: PIL_BICUBIC,
    rescale_factor: 1 / 255,
    size: {shortest_edge: spec.imageSize},
  }
}

/** Writes through a temporary file and a rename, and leaves an identical file alone. */
async function writeIfChanged(path: string, bytes: Uint8Array): Promise<void> {
  const current = await readFile(path).catch(() => undefined)
  if (current && Buffer.compare(current, bytes) === 0) return
  await mkdir(dirname(path), {recursive: true})
  const tmp = `${path}.${process.pid}.tmp`
  await writeFile(tmp, bytes)
  await rename(tmp, path)
}

/** Writes the folder and returns the manifest it wrote (every file with its size and sha256). */
export async function writeClipFolder(dir: string, spec: ClipFolderSpec): Promise<Manifest> {
  const vocabBytes = await readFile(join(spec.tokenizerDir, 'vocab.json'))
  const mergesBytes = await readFile(join(spec.tokenizerDir, 'merges.txt'))
  const vocab = JSON.parse(vocabBytes.toString('utf8')) as Record<string, number>
  const merges = mergeLines(mergesBytes.toString('utf8'))
  const files: FolderFile[] = [
    {path: 'onnx/vision_model.onnx', role: 'image_encoder', bytes: spec.visionModel},
    {path: 'onnx/text_model.onnx', role: 'text_encoder', bytes: spec.textModel},
    {path: 'vocab.json', role: 'tokenizer', bytes: vocabBytes},
    {path: 'merges.txt', role: 'tokenizer', bytes: mergesBytes},
    {path: 'tokenizer.json', role: 'tokenizer', bytes: json(tokenizerJson(vocab, merges))},
    {path: 'tokenizer_config.json', role: 'tokenizer', bytes: json(tokenizerConfig(spec.contextLength))},
    {
      path: 'special_tokens_map.json',
      role: 'tokenizer',
      bytes: json({bos_token: START_TOKEN, eos_token: END_TOKEN, pad_token: END_TOKEN, unk_token: END_TOKEN}),
    },
    {path: 'config.json', role: 'config', bytes: json(modelConfig(spec, vocab))},
    {path: 'preprocessor_config.json', role: 'config', bytes: json(preprocessorConfig(spec))},
  ]
  const preprocess: Preprocessing = {
    resize: spec.imageSize,
    crop: spec.imageSize,
    mean: CLIP_MEAN,
    std: CLIP_STD,
    resample: 'bicubic',
  }
  const manifest: Manifest = {
    id: spec.id,
    family: 'clip',
    embedding_size: spec.embeddingSize,
    context_length: spec.contextLength,
    image: {input: 'pixel_values', output: 'image_embeds'},
    text: {input: 'input_ids', output: 'text_embeds'},
    preprocess,
    files: files.map(
      (f): ModelFile => ({path: f.path, role: f.role, size: f.bytes.byteLength, sha256: sha256(f.bytes)}),
    ),
    ...(spec.source ? {source: spec.source} : {}),
  }
  for (const f of files) await writeIfChanged(join(dir, f.path), f.bytes)
  await writeIfChanged(join(dir, 'manifest.json'), json(manifest))
  return manifest
}
