import Ajv2020Module, {type Options} from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'

// Both are CommonJS modules whose default export NodeNext types as the module namespace.
const Ajv2020 = Ajv2020Module as unknown as typeof Ajv2020Module.default
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/** An ajv for JSON Schema 2020-12, strict about schemas, that knows the string formats (uuid, uri, …). */
export function createAjv(options: Options = {}): InstanceType<typeof Ajv2020> {
  const ajv = new Ajv2020({strict: true, allowUnionTypes: true, ...options})
  addFormats(ajv)
  return ajv
}
