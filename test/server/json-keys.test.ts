import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {duplicateKey} from '../../src/server/json-keys.js'

test('the first name an object gives twice, at any depth; the same name in two objects, or in strings, is no repeat', () => {
  const cases: [string, string | undefined][] = [
    ['{"image_base64":"AAAA","threshold":0.5}', undefined],
    ['{"image_base64":"AAAA","image_base64":"BBBB"}', 'image_base64'],
    ['{"items":[{"url":"a"},{"url":"b"}]}', undefined],
    ['{"items":[{"url":"a","url":"b"}]}', 'url'],
    ['{"items":[1],"items":[2]}', 'items'],
    // The same name however it is escaped; a name padded with whitespace before its colon.
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{"a" \n\t :1,   "a"' + ' '.repeat(200) + ':2}', 'a'],
    // Quotes and colons inside strings, escaped backslashes before a closing quote.
    ['{"note":"\\"a\\": 1","a":"x\\\\","b":"\\\\\\"a\\":"}', undefined],
    ['[{"a":1},{"a":2}]', undefined],
    ['"a"', undefined],
  ]
  for (const [text, expected] of cases) {
    JSON.parse(text)
    assert.is(duplicateKey(text), expected, text)
  }
})

test('a body of one long string is read to its end', () => {
  const text = `{"image_base64":"${'A'.repeat(30_000_000)}","image_base64":"B"}`
  assert.is(duplicateKey(text), 'image_base64')
})

test.run()
