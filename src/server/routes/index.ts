import type {AnyRoute} from '../route.js'
import {categoriesRoute} from './categories.js'
import {healthRoute} from './health.js'
import {imageJobResultsRoute, submitImageJobRoute} from './image-jobs.js'
import {cancelJobRoute, getJobRoute, submitVideoJobRoute} from './jobs.js'
import {moderateJsonRoute} from './json.js'
import {metricsRoute} from './metrics.js'
import {readyRoute} from './ready.js'
import {moderateBatchRoute, moderateFileRoute} from './moderate.js'
import {moderateVideoRoute} from './video.js'

/** The API's routes, in the order the document lists them. */
export const ROUTES: readonly AnyRoute[] = [
  healthRoute,
  readyRoute,
  categoriesRoute,
  moderateFileRoute,
  moderateBatchRoute,
  moderateJsonRoute,
  moderateVideoRoute,
  metricsRoute,
  submitVideoJobRoute,
  submitImageJobRoute,
  getJobRoute,
  cancelJobRoute,
  imageJobResultsRoute,
]
