/** NudeNet 3.4's detector (YOLOv8n, `320n.onnx`): its classes in output order, its input size and tensor names. */

export const NUDENET_LABELS = [
  'FEMALE_GENITALIA_COVERED',
  'FACE_FEMALE',
  'BUTTOCKS_EXPOSED',
  'FEMALE_BREAST_EXPOSED',
  'FEMALE_GENITALIA_EXPOSED',
  'MALE_BREAST_EXPOSED',
  'ANUS_EXPOSED',
  'FEET_EXPOSED',
  'BELLY_COVERED',
  'FEET_COVERED',
  'ARMPITS_COVERED',
  'ARMPITS_EXPOSED',
  'FACE_MALE',
  'BELLY_EXPOSED',
  'MALE_GENITALIA_EXPOSED',
  'ANUS_COVERED',
  'FEMALE_BREAST_COVERED',
  'BUTTOCKS_COVERED',
] as const

export type NudenetLabel = (typeof NUDENET_LABELS)[number]

/** The square the model looks at, in pixels. */
export const NUDENET_SIZE = 320

/** Floats of one prepared frame: 3 planes of NUDENET_SIZE². */
export const NUDENET_INPUT_SIZE = 3 * NUDENET_SIZE * NUDENET_SIZE

export const NUDENET_INPUT = 'images'
export const NUDENET_OUTPUT = 'output0'

/** Candidate boxes of a 320 x 320 input: 40², 20² and 10² cells of YOLOv8's three strides. */
export const NUDENET_ANCHORS = 2100

/** Values per candidate: centre x, centre y, width, height, then one score per class. */
export const NUDENET_ROW = 4 + NUDENET_LABELS.length
