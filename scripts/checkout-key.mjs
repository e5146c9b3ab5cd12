#!/usr/bin/env node
// Prints what an installed checkout of mod depends on, for the GitHub Action's cache of node_modules and dist:
// `<lock>-<tree>`, the sha256 (first 16 hex digits) of package-lock.json, which decides node_modules, and of every
// other file of the checkout (paths and contents, node_modules, dist and .git left out), which decides dist.
// In Node rather than sha256sum, which macOS runners lack.
import {createHash} from 'node:crypto'
import {readFileSync, readdirSync} from 'node:fs'
import {join, relative} from 'node:path'

const root = process.argv[2] ?? '.'
const SKIPPED = new Set(['node_modules', 'dist', '.git'])

function files(dir) {
  return readdirSync(dir, {withFileTypes: true})
    .filter((e) => !(dir === root && SKIPPED.has(e.name)))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []))
}

const digest = (hash) => hash.digest('hex').slice(0, 16)
const tree = createHash('sha256')
for (const file of files(root)) tree.update(`${relative(root, file)}\0`).update(readFileSync(file)).update('\0')
console.log(`${digest(createHash('sha256').update(readFileSync(join(root, 'package-lock.json'))))}-${digest(tree)}`)
