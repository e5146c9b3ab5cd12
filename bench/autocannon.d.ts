/** The part of autocannon's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  interface Options {
    url: string
    method?: string
    headers?: Record<string, string>
    body?: Buffer | string
    connections?: number
    duration?: number
    amount?: number
    timeout?: number
  }
  interface Histogram {
    average: number
    p50: number
    p90: number
    p99: number
    max: number
  }
  interface Result {
    latency: Histogram
    requests: Histogram & {total: number}
    errors: number
    timeouts: number
    non2xx: number
    '2xx': number
    statusCodeStats: Record<string, {count: number}>
    duration: number
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
