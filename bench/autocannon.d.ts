/** Minimal types of autocannon 9 (the package ships none): the options and result fields the benchmark uses. */
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    /** Requests per second over all connections (rate-limited run). */
    overallRate?: number;
    timeout?: number;
    workers?: number;
    /** Request templates; `setupRequest` may rewrite each request before it is sent (e.g. a new query). */
    requests?: Array<{ method?: 'GET' | 'POST'; path?: string; body?: string; headers?: Record<string, string>; setupRequest?: (req: { path?: string; body?: string; method?: string }) => { path?: string; body?: string; method?: string } }>;
  }
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p90: number;
    p99: number;
    p99_9: number;
    max: number;
    total: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    duration: number;
    '2xx': number;
  }
  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
