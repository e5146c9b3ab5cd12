#!/usr/bin/env node
// onnxruntime-node (1.30, Linux and macOS) sends usage telemetry by default: a device id and an event database
// under ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, a .ses file and mat-debug-<pid>.log in the temporary
// folder, events queued for upload. ORT_DISABLE_TELEMETRY=1 switches all of it off when it is set before
// onnxruntime starts, so it is set here, before oclif loads any command; cluster workers inherit it.
process.env.ORT_DISABLE_TELEMETRY = '1'

const {execute} = await import('@oclif/core')
await execute({dir: import.meta.url})
