// `oclif manifest` lists commands in the order the file system returns their files, which differs between
// machines: sorting them makes a build reproduce the committed oclif.manifest.json byte for byte.
import {readFileSync, writeFileSync} from 'node:fs'

const file = new URL('../oclif.manifest.json', import.meta.url)
const manifest = JSON.parse(readFileSync(file, 'utf8'))
manifest.commands = Object.fromEntries(Object.entries(manifest.commands).sort(([a], [b]) => a.localeCompare(b)))
writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n')
