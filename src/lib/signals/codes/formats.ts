/**
 * The kinds of code the codes signal reads, by the stable lowercase names that its evidence and the policy's
 * `formats:` lists use. Kept apart from the reader so that checking a policy loads no WebAssembly.
 */

/** Matrix codes first, then the linear (one-dimensional) barcodes. */
export const CODE_FORMATS = [
  'qr_code',
  'micro_qr_code',
  'data_matrix',
  'aztec',
  'pdf417',
  'ean_13',
  'ean_8',
  'upc_a',
  'upc_e',
  'code_128',
  'code_39',
  'code_93',
  'itf',
  'codabar',
] as const

export type CodeFormat = (typeof CODE_FORMATS)[number]

export function isCodeFormat(name: string): name is CodeFormat {
  return (CODE_FORMATS as readonly string[]).includes(name)
}
