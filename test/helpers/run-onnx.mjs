// `node test/helpers/run-onnx.mjs <job.json>`: runs ONNX models on given inputs and prints their outputs as one
// JSON array. Plain JavaScript with onnxruntime alone, so that it starts quickly under an emulator
// (`qemu-x86_64 -cpu Haswell node test/helpers/run-onnx.mjs ...` checks what an AVX2 CPU computes).
// The job: [{model: <path>, feeds: {<name>: {type, dims, data: number[]}}, output: <name>}, ...].
import {readFileSync} from 'node:fs'
import ort from 'onnxruntime-node'

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const outputs = []
for (const run of job) {
  const session = await ort.InferenceSession.create(run.model)
  const feeds = Object.fromEntries(
    Object.entries(run.feeds).map(([name, {type, dims, data}]) => {
      const values = type === 'int64' ? BigInt64Array.from(data, BigInt) : Float32Array.from(data)
      return [name, new ort.Tensor(type, values, dims)]
    }),
  )
  const result = await session.run(feeds)
  outputs.push(Array.from(result[run.output].data))
  await session.release()
}
process.stdout.write(JSON.stringify(outputs))
