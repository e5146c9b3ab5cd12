/**
 * `npx tsx bench/word-list-prose.ts [FILE...]`: how often word lists match ordinary prose, which says whether the
 * looser matches (a `€` misread, a joined phrase inside a longer word: src/lib/signals/text/rules.ts) cost false
 * hits. Every word of the files (by default the Markdown under node_modules, vim's and Perl's manuals, where
 * installed) is read as a line against one rule listing the words and phrases of typical spam and abuse lists
 * below, and each hit is counted under the kind of match that made it: the listed word as written (after the
 * folding of normalise.ts), or one of the looser kinds. Prints the counts and the commonest words per kind. Not
 * part of `npm run bench`: no target, a measurement by hand.
 */
import {readdirSync, readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'

import {entryKeys} from '../src/lib/rules/normalise.js'
import {applyRules, compileRules} from '../src/lib/rules/match.js'

const WORDS = `freebies cheap pills viagra cialis casino escort porn nude nudes sex drugs cocaine heroin weed bitcoin crypto forex
  loan loans lottery winner prize replica rolex discount offer free click subscribe follow whatsapp telegram onlyfans hookup
  dating singles webcam xxx kill gun guns weapon bomb hate scam investment profit bonus jackpot gamble betting poker slots
  pharmacy prescription weight diet steroids opioid meth ketamine vape cigarette tobacco alcohol beer vodka nazi terror suicide`
const PHRASES = ['buy cheap pills', 'make money fast', 'work from home', 'click here', 'limited offer', 'act now', 'earn cash', 'weight loss', 'free money', 'best price', 'hot singles', 'free gift']
const LISTED = [...WORDS.split(/\s+/), ...PHRASES]

function* filesUnder(dir: string, keep: (name: string) => boolean): Generator<string> {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    const path = join(dir, name)
    const stat = statSync(path, {throwIfNoEntry: false})
    if (stat?.isDirectory()) yield* filesUnder(path, keep)
    else if (stat?.isFile() && keep(name)) yield path
  }
}

const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : [
        ...filesUnder('node_modules', (n) => n.endsWith('.md')),
        ...filesUnder('/usr/share/vim/vim90/doc', (n) => n.endsWith('.txt')),
        ...filesUnder('/usr/share/perl/5.36.0/pod', (n) => n.endsWith('.pod')),
      ]
const rules = compileRules([{name: 'list', category: 'spam', words: LISTED}])
const plain = new Set(LISTED.flatMap((e) => [entryKeys(e).join(' '), entryKeys(e).join('')]))
const box = {x: 0, y: 0, width: 100, height: 20}
const counts = new Map<string, Map<string, number>>()
let words = 0
for (const file of files) {
  for (const word of readFileSync(file, 'utf8').split(/\s+/)) {
    if (word === '') continue
    words++
    for (const hit of applyRules(rules, [{text: word, box}])) {
      const key = entryKeys(hit.text).join(' ')
      const kind = plain.has(key) ? 'as listed' : 'looser (misread, or inside a longer word)'
      const byWord = counts.get(kind) ?? new Map<string, number>()
      const read = hit.text.toLowerCase()
      byWord.set(read, (byWord.get(read) ?? 0) + 1)
      counts.set(kind, byWord)
    }
  }
}
console.log(`${files.length} files, ${words} words, ${LISTED.length} listed words and phrases`)
for (const [kind, byWord] of counts) {
  const top = [...byWord].sort((a, b) => b[1] - a[1]).slice(0, 12)
  console.log(`${kind}: ${[...byWord.values()].reduce((a, b) => a + b, 0)} hits; ${top.map(([w, n]) => `${w} ${n}`).join(', ')}`)
}
