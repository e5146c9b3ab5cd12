#!/usr/bin/env node
// Prints what an installed checkout of mod depends on, for the GitHub Action's cache of node_modules and dist:
// `<lock>-<build>`, the sha256 (first 16 hex digits) of package-lock.json, which decides node_modules, and of what
// the build reads (src/, package.json, the tsconfig files, the build's scripts: paths and contents), which
// decides dist. The rest of the checkout (models, docs, tests) is used from the checkout itself, never from the
// cache, so it is not hashed: hashing it would cost every job a read of its tens of megabytes.
// In Node rather than sha256sum, which macOS runners lack.
import {createHash} from 'node:crypto'
import {existsSync, readFileSync, readdirSync} from 'node:fs'
import {join, relative} from 'node:path'

const root = process.argv[2] ?? '.'
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/bundle-typebox.mjs', 'scripts/manifest-order.mjs']

function files(dir) {
  return readdirSync(dir, {withFileTypes: true})
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []))
}

const digest = (hash) => hash.digest('hex').slice(0, 16)
const build = createHash('sha256')
const inputs = [...BUILD_INPUTS.map((f) => join(root, f)).filter((f) => existsSync(f)), ...(existsSync(join(root, 'src')) ? files(join(root, 'src')) : [])]
for (const file of inputs) build.update(`${relative(root, file)}\0`).update(readFileSync(file)).update('\0')
console.log(`${digest(createHash('sha256').update(readFileSync(join(root, 'package-lock.json'))))}-${digest(build)}`)
