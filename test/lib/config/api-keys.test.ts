// MOD_API_KEYS: named keys, read and checked when the settings are read; a mistake names the entry, never a key.
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../../src/lib/config/settings.js'

const keysOf = (env: Record<string, string>) => readSettings({}, env, '/work/here').server

function failure(env: Record<string, string>): {code: string; message: string} {
  try {
    keysOf(env)
  } catch (e) {
    return e as {code: string; message: string}
  }
  throw new Error('expected a failure')
}

test('MOD_API_KEYS holds name:key pairs separated by commas; spaces around an entry and ":" inside a key are kept apart', () => {
  const s = keysOf({MOD_API_KEYS: 'alice:k1, bob.ci:k2:with:colons ,carol_3: k3'})
  assert.equal(s.apiKeys, [
    {name: 'alice', key: 'k1'},
    {name: 'bob.ci', key: 'k2:with:colons'},
    {name: 'carol_3', key: 'k3'},
  ])
  assert.is(s.apiKey, undefined)
})

test('unset or empty MOD_API_KEYS is no named key; MOD_API_KEY alone is read as before', () => {
  assert.equal(keysOf({}).apiKeys, [])
  assert.equal(keysOf({MOD_API_KEYS: ' '}).apiKeys, [])
  const single = keysOf({MOD_API_KEY: 'only'})
  assert.equal([single.apiKey, single.apiKeys], ['only', []])
})

test('MOD_API_KEY is trimmed (the newline of a key file is no part of the key); exactly empty is no key; whitespace alone is refused', () => {
  assert.is(keysOf({MOD_API_KEY: 'k0\n'}).apiKey, 'k0')
  assert.is(keysOf({MOD_API_KEY: ' \tk0 \r\n'}).apiKey, 'k0')
  assert.is(keysOf({MOD_API_KEY: ''}).apiKey, undefined)
  for (const value of [' ', '\n', ' \t\r\n']) {
    const e = failure({MOD_API_KEY: value})
    assert.is(e.code, 'invalid_config', JSON.stringify(value))
    assert.is(e.message, 'MOD_API_KEY is not valid: it holds only whitespace; give the key, or leave MOD_API_KEY empty or unset to need no key')
  }
  // A trimmed MOD_API_KEY is the one MOD_API_KEYS' keys must differ from.
  assert.match(failure({MOD_API_KEY: 'k0\n', MOD_API_KEYS: 'alice:k0'}).message, /the key of "alice" is also another name's key/)
})

test('a key with a character other than printable ASCII is refused, naming no key: clients send such characters differently', () => {
  assert.is(keysOf({MOD_API_KEY: 'a key with spaces!~'}).apiKey, 'a key with spaces!~')
  for (const key of ['pässwort', 'clé€', 'tab\tinside', 'nul\u0000']) {
    const single = failure({MOD_API_KEY: key})
    assert.is(single.code, 'invalid_config', JSON.stringify(key))
    assert.match(single.message, /^MOD_API_KEY is not valid: it holds a character other than printable ASCII/)
    assert.not.ok(single.message.includes(key))
    const named = failure({MOD_API_KEYS: `alice:k1,bob:${key}`})
    assert.match(named.message, /^MOD_API_KEYS is not valid: the key of "bob" holds a character other than printable ASCII/)
    assert.not.ok(named.message.includes(key))
  }
})

test('MOD_API_KEY and MOD_API_KEYS together: the single key is named default, and no other entry may take its name or key', () => {
  assert.equal(keysOf({MOD_API_KEY: 'k0', MOD_API_KEYS: 'alice:k1'}).apiKeys, [{name: 'alice', key: 'k1'}])
  assert.match(failure({MOD_API_KEY: 'k0', MOD_API_KEYS: 'default:k1'}).message, /"default" is MOD_API_KEY's name/)
  assert.match(failure({MOD_API_KEY: 'k0', MOD_API_KEYS: 'alice:k0'}).message, /the key of "alice" is also another name's key/)
})

test('a malformed MOD_API_KEYS is invalid_config naming the entry and the form expected, never a key', () => {
  const cases: [string, RegExp][] = [
    ['alice:k1,secret-without-name', /entry 2 has no ":" between a name and a key/],
    ['alice:k1,', /entry 2 has no ":"/],
    [':k1', /entry 1's name "" is not 1 to 64 letters/],
    ['al ice:k1', /entry 1's name "al ice" is not/],
    ['-x:k1', /entry 1's name "-x" is not/],
    [`${'a'.repeat(65)}:k1`, /entry 1's name "a+" is not/],
    ['alice:', /the key of "alice" is empty/],
    ['alice:k1,alice:k2', /the name "alice" is given twice/],
    ['alice:same,bob:same', /the key of "bob" is also another name's key/],
  ]
  for (const [value, why] of cases) {
    const e = failure({MOD_API_KEYS: value})
    assert.is(e.code, 'invalid_config', value)
    assert.match(e.message, /^MOD_API_KEYS is not valid: /)
    assert.match(e.message, why)
    assert.match(e.message, /expected name:key pairs separated by commas, e\.g\. "alice:KEY1,bob:KEY2"$/)
    for (const secret of ['secret-without-name', 'same', 'k2']) assert.not.ok(e.message.includes(secret), `${value}: ${e.message}`)
  }
})

test.run()
