// Runs the slow-upload scenario once, for slow-attack.test.ts inside a network namespace. Arguments: the number of
// connections per attacking address, the address to listen on, the legitimate client's address, then the attackers'
// addresses. It prints the outcome as JSON.
import {attackScenario} from './slow-attack-scenario.js'

const [perAddress, host, legit, ...attackers] = process.argv.slice(2)
process.stdout.write(`${JSON.stringify(await attackScenario(host, legit, attackers, Number(perAddress)))}\n`)
