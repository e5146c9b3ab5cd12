/**
 * Imported first by every bench entry script: onnxruntime-node's usage telemetry (on by default in 1.30 on
 * Linux and macOS: a device id under ~/.cache/Microsoft, files in the temporary folder, events queued for
 * upload) is switched off before any import below it loads onnxruntime; child processes inherit it.
 */
process.env.ORT_DISABLE_TELEMETRY = '1'
