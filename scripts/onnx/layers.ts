/** Building blocks made of several ONNX nodes, shared by the model builders. */
import {attr, type GraphBuilder} from './graph.js'

export type ReduceOp = 'ReduceSum' | 'ReduceMean' | 'ReduceL2' | 'ReduceMax' | 'ReduceMin' | 'ReduceProd'

/** ReduceSum takes its axes as an input from opset 13, the other reductions from opset 18. */
function axesAsInput(op: ReduceOp, opset: number): boolean {
  return opset >= (op === 'ReduceSum' ? 13 : 18)
}

export function reduce(
  g: GraphBuilder,
  op: ReduceOp,
  x: string,
  axes: number[],
  keepdims: boolean,
  output?: string,
): string {
  const keep = {keepdims: attr.int(keepdims ? 1 : 0)}
  return axesAsInput(op, g.opset)
    ? g.op(op, [x, g.int64s(axes, [axes.length], 'axes')], keep, output)
    : g.op(op, [x], {...keep, axes: attr.ints(axes)}, output)
}

/** x / max(‖x‖₂, eps) along the last axis: a zero vector stays zero instead of becoming NaN. */
export function l2Normalize(g: GraphBuilder, x: string, eps: number, output?: string): string {
  const norm = reduce(g, 'ReduceL2', x, [-1], true)
  const safe = g.op('Max', [norm, g.floats([eps], [], 'eps')])
  return g.op('Div', [x, safe], {}, output)
}
