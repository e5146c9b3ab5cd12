import Ajv2020Module, {type Options} from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'

// Both are CommonJS modules whose default export NodeNext types as the module namespace.
const Ajv2020 = Ajv2020Module as unknown as typeof Ajv2020Module.default
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/**
 * An ajv for JSON Schema 2020-12, strict about schemas, that knows the string formats (uuid, uri, …). It compiles
 * only mod's own schemas, never one a user sends, so it does not check them against the 2020-12 meta-schema as it
 * compiles them (compiling the meta-schema cost each ajv 30 ms of CPU, in each process and worker): the suite checks
 * every one of them once (test/server/ajv.test.ts), and strict mode still refuses unknown keywords here.
 */
export function createAjv(options: Options = {}): InstanceType<typeof Ajv2020> {
  const ajv = new Ajv2020({strict: true, allowUnionTypes: true, validateSchema: false, ...options})
  addFormats(ajv)
  return ajv
}
