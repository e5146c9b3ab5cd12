/**
 * What the rule engine reads: lines of text, each with the box it stands in. The text signal gives the lines it
 * read in a frame, the codes signal each code's payload lines in the code's box; the engine knows neither.
 */

/** An axis-aligned rectangle in image pixels. */
export interface LineBox {
  x: number
  y: number
  width: number
  height: number
}

/** A line of text and where it stands. */
export interface RuleLine {
  text: string
  box: LineBox
}
