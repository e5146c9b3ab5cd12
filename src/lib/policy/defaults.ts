/**
 * The built-in policy: the 11 categories of the specification, each with CLIP-style prompts, benign
 * look-alikes (negatives) and a parent where one category is a kind of another.
 *
 * Parents: weapons, gore and self_harm are kinds of violence (self-harm is violence against oneself, as in
 * common moderation taxonomies); sexual_activity is a kind of nudity. suggestive has no parent: suggestive
 * content is by definition not nude, so calling it a kind of nudity would be wrong. drugs, alcohol and
 * tobacco stay separate because policies usually treat them differently (illegal vs age-restricted).
 *
 * Prompt wording avoids the words red, green and blue: the toy test model embeds exactly those words, so on
 * it every default prompt is the zero vector and every built-in label stays safe (its fixed meaning is described in scripts/onnx/toy-clip.ts).
 */
import type {Calibration, Category, SignalWeights} from './types.js'

export const DEFAULT_THRESHOLD = 0.5

/**
 * calibrated = sigmoid(scale * raw + bias). raw is a margin in CLIP logits (temperature 100), so a cosine
 * margin of 0.06 between the positives and the reference prompts reaches 0.5; raw = 0 gives about 0.047.
 * A placeholder until fitted on labelled images: the specification allows tuning in minor releases.
 */
export const BUILTIN_CALIBRATION: Readonly<Calibration> = Object.freeze({scale: 0.5, bias: -3})

/** Custom categories are uncalibrated: raw = 0 maps to 0.5, a clear margin to near 0 or 1. */
export const CUSTOM_CALIBRATION: Readonly<Calibration> = Object.freeze({scale: 1, bias: 0})

/** Ordinary scenes every category is weighed against, so a prompt that merely matches "a photo" scores low. */
export const DEFAULT_NEUTRAL: readonly string[] = Object.freeze([
  'a photo',
  'a photo of a person',
  'a photo of a group of people',
  'a photo of a landscape',
  'a photo of a city street',
  'a photo of a room interior',
  'a photo of food on a table',
  'a photo of an animal',
  'a photo of an everyday object',
  'a screenshot of a text document',
])

interface CategorySeed {
  name: string
  parent: string | null
  prompts: string[]
  negatives: string[]
  /** Default: the zero-shot prompts alone. */
  signals?: SignalWeights
}

/** Categories that do not say otherwise are scored by their prompts alone. */
export const CLIP_ONLY: Readonly<SignalWeights> = Object.freeze({clip: 1})

/**
 * The categories the NSFW specialist was trained for lean on it: its score counts three times the zero-shot one
 * where both ran (suggestive, the vaguest of its classes, twice), and it stands alone where no CLIP model is
 * installed.
 */
const NSFW_LED: Readonly<SignalWeights> = Object.freeze({clip: 1, nsfw: 3})
const NSFW_ASSISTED: Readonly<SignalWeights> = Object.freeze({clip: 1, nsfw: 2})

const SEEDS: CategorySeed[] = [
  {
    name: 'nudity',
    parent: null,
    prompts: [
      'a photo of a naked person',
      'a photo of a nude woman',
      'a photo of a nude man',
      'a photo of exposed genitals',
      'a photo of a topless woman showing her breasts',
      'an explicit nude photo',
    ],
    signals: NSFW_LED,
    negatives: [
      'a photo of a person in swimwear at the beach',
      'a photo of a woman in a bikini',
      'a photo of a shirtless man at the beach',
      'a photo of a classical marble statue in a museum',
      'a photo of a mannequin in a shop window',
    ],
  },
  {
    name: 'sexual_activity',
    parent: 'nudity',
    prompts: [
      'a photo of people having sex',
      'an explicit photo of a sexual act',
      'a pornographic image',
      'a photo of a naked couple having intercourse',
      'a still from a pornographic video',
    ],
    signals: NSFW_LED,
    negatives: [
      'a photo of a couple hugging',
      'a photo of a couple kissing at their wedding',
      'a photo of people dancing together',
      'a photo of a dressed couple cuddling on a sofa',
    ],
  },
  {
    name: 'suggestive',
    parent: null,
    prompts: [
      'a photo of a person in lingerie posing seductively',
      'a provocative photo of a woman in underwear',
      'a photo of a sexually suggestive pose',
      'a photo of a person in a revealing outfit posing provocatively',
      'an erotic boudoir photo',
    ],
    signals: NSFW_ASSISTED,
    negatives: [
      'a photo of a swimmer at a swimming competition',
      'a photo of an athlete in sportswear',
      'a fashion catalogue photo of a fully dressed model',
      'a photo of a yoga class',
    ],
  },
  {
    name: 'violence',
    parent: null,
    prompts: [
      'a photo of people fighting',
      'a photo of a person punching someone in the face',
      'a photo of a violent assault',
      'a photo of a riot with people attacking each other',
      'a photo of a person being beaten',
      'a photo of a person being shot',
    ],
    negatives: [
      'a photo of a boxing match in a ring',
      'a photo of a martial arts class',
      'a photo of people playing rugby',
      'a photo of friends play fighting',
    ],
  },
  {
    name: 'gore',
    parent: 'violence',
    prompts: [
      'a photo of a bloody wound',
      'a photo of a mutilated body',
      'a photo of blood and gore',
      'a photo of a dead body with severe wounds',
      'a photo of a gruesome accident scene',
      'a photo of a body with a limb torn off',
    ],
    negatives: [
      'a photo of ketchup on a plate of fries',
      'a photo of tomato sauce spilled on a table',
      'a photo of raw meat at the butcher',
      'a photo of a person in halloween zombie makeup',
      'a photo of a surgeon in an operating room',
    ],
  },
  {
    name: 'weapons',
    parent: 'violence',
    prompts: [
      'a photo of a gun',
      'a photo of a handgun',
      'a photo of a rifle',
      'a photo of a person aiming a pistol',
      'a photo of a person threatening someone with a knife',
      'a photo of a combat knife',
      'a photo of a grenade',
    ],
    negatives: [
      'a photo of a kitchen knife cutting vegetables',
      'a photo of cutlery on a dinner table',
      'a photo of a power drill',
      'a photo of a hair dryer',
      'a photo of a toy water pistol',
    ],
  },
  {
    name: 'hate_symbols',
    parent: null,
    prompts: [
      'a photo of a swastika',
      'a photo of a nazi flag',
      'a photo of people in ku klux klan robes',
      'a photo of a nazi salute',
      'graffiti of a hate symbol',
      'a photo of white supremacist symbols',
    ],
    negatives: [
      'a photo of a hindu temple with religious symbols',
      'a photo of a national flag',
      'a photo of a student raising a hand in class',
      'a photo of a geometric tile pattern',
      'a photo of students in gowns at a graduation',
    ],
  },
  {
    name: 'drugs',
    parent: null,
    prompts: [
      'a photo of illegal drugs',
      'a photo of lines of cocaine on a table',
      'a photo of a person injecting heroin with a syringe',
      'a photo of cannabis buds',
      'a photo of a person smoking a joint',
      'a photo of a crack pipe',
    ],
    negatives: [
      'a photo of a pharmacy shelf with medicine',
      'a photo of a nurse giving a vaccination',
      'a photo of flour on a baking table',
      'a photo of herbs and spices in jars',
      'a photo of a bowl of salad',
    ],
  },
  {
    name: 'self_harm',
    parent: 'violence',
    prompts: [
      'a photo of self-harm cuts on a wrist',
      'a photo of a person cutting their own arm with a blade',
      'a photo of scars from self-injury on a forearm',
      'a photo of a person attempting suicide',
      'a photo of a noose hanging from the ceiling',
    ],
    negatives: [
      'a photo of a medical bandage on an arm',
      'a photo of a surgical scar after an operation',
      'a photo of a nurse bandaging a patient',
      'a photo of a tattoo on a forearm',
      'a photo of a blood test at a clinic',
    ],
  },
  {
    name: 'alcohol',
    parent: null,
    prompts: [
      'a photo of alcoholic drinks',
      'a photo of a bottle of beer',
      'a photo of a glass of wine',
      'a photo of a person drinking whiskey',
      'a photo of people drinking at a bar',
      'a photo of shots of vodka',
      'a photo of a drunk person',
    ],
    negatives: [
      'a photo of a glass of juice',
      'a photo of a bottle of soda',
      'a photo of a cup of coffee',
      'a photo of a glass of water',
      'a photo of iced tea',
    ],
  },
  {
    name: 'tobacco',
    parent: null,
    prompts: [
      'a photo of a person smoking a cigarette',
      'a photo of a pack of cigarettes',
      'a photo of a cigar',
      'a photo of an ashtray full of cigarette butts',
      'a photo of a person vaping an e-cigarette',
      'a photo of a tobacco pipe',
    ],
    negatives: [
      'a photo of a person holding a pen near their mouth',
      'a photo of sticks of chalk',
      'a photo of burning incense sticks',
      'a photo of a person breathing out on a cold winter day',
    ],
  },
]

/** The 11 built-in categories, in the specification's order; frozen, so merging a policy copies them. */
export const DEFAULT_CATEGORIES: readonly Category[] = Object.freeze(
  SEEDS.map((seed) =>
    Object.freeze({
      ...seed,
      prompts: Object.freeze([...seed.prompts]) as string[],
      negatives: Object.freeze([...seed.negatives]) as string[],
      signals: seed.signals ?? CLIP_ONLY,
      threshold: DEFAULT_THRESHOLD,
      calibration: BUILTIN_CALIBRATION,
      origin: 'builtin' as const,
    }),
  ),
)
