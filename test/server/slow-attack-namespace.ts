// Runs slow-upload scenarios one after the other, for slow-attack.test.ts inside a network namespace. Arguments: the
// address to listen on, the legitimate client's address, then one JSON argument per scenario:
// {"perAddress": connections per attacking address, "attackers": [addresses]}. It prints the outcomes as a JSON array.
import {attackScenario, type Outcome} from './slow-attack-scenario.js'

const [host, legit, ...scenarios] = process.argv.slice(2)
const outcomes: Outcome[] = []
for (const scenario of scenarios) {
  const {perAddress, attackers} = JSON.parse(scenario) as {perAddress: number; attackers: string[]}
  outcomes.push(await attackScenario(host, legit, attackers, perAddress))
}
process.stdout.write(`${JSON.stringify(outcomes)}\n`)
