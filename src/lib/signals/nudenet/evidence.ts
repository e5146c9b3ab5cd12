/** What the NudeNet detector reports in results: the body parts it found, as `regions`, with their boxes. */
import {Type, type Static} from '../../typebox.js'

import {closed, pixelBox} from '../../schema-parts.js'
import {onceEach} from '../overlap.js'
import type {EvidenceKind} from '../signal.js'

export const Region = Type.Object(
  {
    label: Type.String({description: 'What NudeNet found there, e.g. FEMALE_BREAST_EXPOSED, BUTTOCKS_COVERED, BELLY_EXPOSED.'}),
    score: Type.Number({minimum: 0, maximum: 1, description: "The detector's confidence."}),
    box: pixelBox('[x, y, width, height] in pixels of the image as uploaded (after EXIF rotation), any border trim undone.'),
  },
  {...closed, description: 'A body part found by the NudeNet detector.'},
)

export type Region = Static<typeof Region>

const imageFields = {
  regions: Type.Optional(
    Type.Array(Region, {
      description:
        'Present only where the NudeNet detector is installed (`mod models pull nudenet`): the intimate body parts (exposed or covered) and bare bellies it found, best first; for an animation (or an image with transparency, scored as a light and a dark page show it), those of every frame scored, a part found again at the same place listed once. Faces and feet are not listed. Empty when it found none.',
    }),
  ),
}

/** One frame's regions (already filtered and rounded by the signal); an image's are those of its frames, best first. */
export const nudenetEvidence: EvidenceKind<Region[], typeof imageFields> = {
  imageFields,
  image: (frames) => ({regions: onceEach(frames.flat().sort((a, b) => b.score - a.score), (a, b) => a.label === b.label)}),
  marks: (fields) => (fields.regions ?? []).map((g) => ({box: g.box, kind: 'region', caption: `${g.label} ${g.score.toFixed(2)}`})),
  notes: (fields) => (fields.regions ?? []).map((g) => `region ${g.label} ${g.score.toFixed(2)}`),
}
