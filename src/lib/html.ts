/** Text for HTML written by `mod` (reports that are opened offline): escaping done once, for every page. */

/** Text or an attribute value with &, <, >, " and ' escaped. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** JSON inside <script>: "<" escaped so no "</script>" can end the block early. */
export const scriptJson = (value: unknown): string => JSON.stringify(value).replace(/</g, '\\u003c')

/** Pages that fetch nothing: inline scripts and styles, images only from data: URIs. */
export const OFFLINE_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
