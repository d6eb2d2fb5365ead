/**
 * A small fault proxy in front of a service: each request is forwarded, unless a scripted
 * fault is queued for its route. Every request's arrival time, method, path, headers and body
 * are recorded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  /** Answer this status (and these headers) without forwarding. */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  /** Forward, wait for the service's whole answer, then reset the client's connection. */
  | { kind: 'reset-after-forward' };

export interface Arrival {
  at: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The status the client was given, or undefined for a reset. */
  answered: number | undefined;
}

export class FaultProxy {
  readonly arrivals: Arrival[] = [];
  private readonly faults = new Map<string, Fault[]>();
  private server: http.Server | undefined;
  url = '';

  constructor(private readonly upstream: string) {}

  /** Queues faults for `METHOD /path` (the path without its query): one per request, in order. */
  script(method: string, path: string, ...faults: Fault[]): void {
    const key = `${method} ${path}`;
    this.faults.set(key, [...(this.faults.get(key) ?? []), ...faults]);
  }

  /** The recorded requests of `METHOD /path`. */
  to(method: string, path: string): Arrival[] {
    return this.arrivals.filter((a) => a.method === method && a.path === path);
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const arrival: Arrival = {
      at: performance.now(),
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      body: body.toString('utf8'),
      answered: undefined,
    };
    this.arrivals.push(arrival);
    const fault = this.faults.get(`${arrival.method} ${path}`)?.shift();
    if (fault?.kind === 'status') {
      const payload = JSON.stringify(fault.body ?? { error: 'injected by the fault proxy', code: 'INTERNAL' });
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      res.end(payload);
      arrival.answered = fault.status;
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || ['host', 'connection', 'content-length'].includes(name)) continue;
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const answer = await fetch(this.upstream + (req.url ?? '/'), {
      method: arrival.method,
      headers,
      body: body.length > 0 ? body : undefined,
      redirect: 'manual',
    });
    const text = Buffer.from(await answer.arrayBuffer());
    if (fault?.kind === 'reset-after-forward') {
      // The service acted and answered; the client never hears of it.
      req.socket.resetAndDestroy();
      return;
    }
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(name)) out[name] = value;
    });
    res.writeHead(answer.status, out);
    res.end(text);
    arrival.answered = answer.status;
  }
}
