import type {IncomingMessage} from 'node:http'

import {multipart, type PluginFunction} from 'formidable'

import {ModError} from '../lib/errors.js'

/**
 * A multipart request two parsers could read as different forms is refused, as a JSON key given twice is: a gateway
 * in front of mod that parses the upload itself (to store it) would keep other files than those mod scored. Parsers
 * differ on a header or a parameter given twice: Node and formidable take the first Content-Type and boundary, and the
 * last of a part's headers; Werkzeug (Flask) takes the last boundary and a part's first Content-Disposition.
 */

/** The names of a header value's `; name=value` parameters, lower-cased, in order (quoted values may hold `;`). */
function parameterNames(value: string): string[] {
  return [...value.matchAll(/;\s*([^\s=;]+)\s*=\s*(?:"(?:[^"\\]|\\.)*"|[^;]*)/g)].map((m) => m[1].toLowerCase())
}

function repeated(names: readonly string[]): string | undefined {
  return names.find((name, i) => names.indexOf(name) !== i)
}

const twice = (what: string) => new ModError('bad_request', `the multipart/form-data request gives ${what} twice: parsers differ on which one counts, so send it once`)

/** Refuses two Content-Type headers, and a parameter of the Content-Type (the boundary) given twice. */
export function checkFraming(req: IncomingMessage): void {
  if (req.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === 'content-type').length > 1) throw twice('the Content-Type header')
  const parameter = repeated(parameterNames(req.headers['content-type'] ?? ''))
  if (parameter !== undefined) throw twice(`the Content-Type parameter "${parameter}"`)
}

interface PartEvent {
  name: string
  buffer: Buffer
  start: number
  end: number
}

/**
 * A formidable plugin, after `multipart` (which makes the parser): a part giving a header twice, or a parameter of
 * its Content-Disposition twice (`name`, `filename`), ends the parse with bad_request before the part is read.
 */
const uniquePartHeaders: PluginFunction = (form) => {
  const parser = (form as unknown as {_parser?: {on(event: 'data', listener: (e: PartEvent) => void): void}})._parser
  let seen = new Set<string>()
  let field = ''
  let value = ''
  parser?.on('data', ({name, buffer, start, end}) => {
    if (name === 'partBegin') seen = new Set()
    else if (name === 'headerField') field += buffer.toString('latin1', start, end)
    else if (name === 'headerValue') value += buffer.toString('latin1', start, end)
    else if (name === 'headerEnd') {
      const header = field.toLowerCase()
      const parameter = header === 'content-disposition' ? repeated(parameterNames(value)) : undefined
      field = ''
      value = ''
      // Thrown inside formidable's write, which ends the parse with it.
      if (seen.has(header)) throw twice(`a part's ${header} header`)
      if (parameter !== undefined) throw twice(`the Content-Disposition parameter "${parameter}" of a part`)
      seen.add(header)
    }
  })
}

/** The plugins of every multipart form of the server. */
export const MULTIPART_PLUGINS: PluginFunction[] = [multipart, uniquePartHeaders]
