/**
 * TypeBox, as every module of mod imports it. The build (scripts/bundle-typebox.mjs) replaces this module's compiled
 * form with TypeBox bundled into one file: loaded as its 374 modules, it cost every `mod` command about 0.1 s of
 * CPU at start on Node 20, whatever the command did.
 */
export * from 'typebox'
