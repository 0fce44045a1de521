/**
 * The one way to the REST API under `<base>/pai/api/`: `requestRaw` over
 * `ServerConnection.makeRequest`, so authentication, the XSRF header and the
 * error mapping live in one place; with the URL, query and body helpers the
 * typed client (`api.ts`) builds on.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { ErrorBody, FieldError } from './restmodels';

/** The server extension's URL prefix, below the server's base URL. */
export const API_NAMESPACE = 'pai/api';

/**
 * An error answered by the REST API (or the failure to reach it).
 *
 * `message` is the server's sentence; `errors` point at fields of the input,
 * for forms to show next to the offending field. `status` is 0 when the
 * Jupyter server itself could not be reached.
 */
export class PAIRequestError extends Error implements ErrorBody {
  readonly status: number;
  readonly errors: FieldError[];
  readonly response: Response | null;

  constructor(
    message: string,
    status: number,
    errors: FieldError[] = [],
    response: Response | null = null
  ) {
    super(message);
    this.name = 'PAIRequestError';
    this.status = status;
    this.errors = errors;
    this.response = response;
    // Keep `instanceof` working when compiled to ES5-style classes.
    Object.setPrototypeOf(this, PAIRequestError.prototype);
  }

  /** Neither the Jupyter server nor the cluster behind it answered. */
  get unreachable(): boolean {
    return this.status === 0 || this.status === 503;
  }

  /** A one-line description for a panel: "cluster unreachable: …". */
  describe(): string {
    if (this.status === 0) {
      return `Jupyter server unreachable: ${this.message}`;
    }
    if (this.status === 503) {
      return `cluster unreachable: ${this.message}`;
    }
    return this.message;
  }

  /** Build the error from a non-2xx response, reading its JSON body if any. */
  static async fromResponse(
    response: Response,
    what: string
  ): Promise<PAIRequestError> {
    let text = '';
    try {
      text = await response.text();
    } catch {
      // The body may be gone already; the status still says enough.
    }
    const body = parseErrorBody(text);
    const fallback =
      `${what} failed: ${response.status} ${response.statusText}`.trim();
    return new PAIRequestError(
      body?.message || fallback,
      response.status,
      body?.errors ?? [],
      response
    );
  }
}

function parseErrorBody(text: string): Partial<ErrorBody> | null {
  if (!text) {
    return null;
  }
  try {
    const data = JSON.parse(text);
    if (data && typeof data === 'object') {
      const errors = Array.isArray(data.errors)
        ? data.errors
            .filter((e: any) => e && typeof e === 'object')
            .map((e: any) => ({
              path: String(e.path ?? ''),
              message: String(e.message ?? '')
            }))
        : [];
      // Tornado's own errors say `reason`; ours say `message`.
      const message = data.message ?? data.reason ?? undefined;
      return { message: message ? String(message) : undefined, errors };
    }
  } catch {
    // Not JSON (an HTML error page, a proxy's text): use the status line.
  }
  return null;
}

/** The URL of an endpoint below `pai/api`, for links and downloads. */
export function apiUrl(
  endPoint: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): string {
  return URLExt.join(settings.baseUrl, API_NAMESPACE, endPoint);
}

/**
 * Send a request to the REST API and return the response when it is 2xx.
 *
 * @throws PAIRequestError for a non-2xx answer or an unreachable server.
 */
export async function requestRaw(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<Response> {
  const url = apiUrl(endPoint, settings);
  const what = `${init.method ?? 'GET'} ${API_NAMESPACE}/${endPoint.split('?')[0]}`;
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error: any) {
    if (init.signal?.aborted || error?.name === 'AbortError') {
      throw abortError();
    }
    throw new PAIRequestError(
      `${what}: ${error?.message ?? String(error)}`,
      0,
      [],
      null
    );
  }
  // 304 answers a conditional request (`If-None-Match`): the caller's copy holds.
  if (!response.ok && response.status !== 304) {
    throw await PAIRequestError.fromResponse(response, what);
  }
  return response;
}

/**
 * Call the REST API and return its JSON body as `T` (`undefined` when empty).
 *
 * @throws PAIRequestError for a non-2xx answer or an unreachable server.
 */
export async function requestAPI<T>(
  endPoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const response = await requestRaw(endPoint, init, settings);
  const text = await response.text();
  if (!text) {
    return undefined as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new PAIRequestError(
      `${API_NAMESPACE}/${endPoint.split('?')[0]} answered with something other than JSON`,
      response.status,
      [],
      response
    );
  }
}

/** The error a cancelled request rejects with (`name === 'AbortError'`). */
export function abortError(): Error {
  const error = new Error('the request was cancelled');
  error.name = 'AbortError';
  return error;
}

/** Whether an error only says that a request was cancelled. */
export function isAbortError(error: unknown): boolean {
  return (error as any)?.name === 'AbortError';
}

/** A query string from defined values; arrays repeat the key (`state=A&state=B`). */
export function queryString(
  params: Record<
    string,
    string | number | boolean | string[] | null | undefined
  >
): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === '') {
      continue;
    }
    if (Array.isArray(value)) {
      value.forEach(v => search.append(key, v));
    } else {
      search.append(key, String(value));
    }
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** Encode a slash-separated path segment by segment. */
export function encodePath(path: string): string {
  return path
    .split('/')
    .filter(part => part.length > 0)
    .map(encodeURIComponent)
    .join('/');
}

/** A number a response header holds, or null. */
export function headerNumber(response: Response, name: string): number | null {
  const value = response.headers.get(name);
  if (value === null || value === '') {
    return null;
  }
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/** Decode a streamed body piece by piece. */
export async function readStream(
  response: Response,
  onText: (text: string) => void,
  signal?: AbortSignal
): Promise<void> {
  const body = response.body;
  if (!body || typeof body.getReader !== 'function') {
    onText(await response.text());
    return;
  }
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const onAbort = () => {
    void reader.cancel().catch(() => undefined);
  };
  signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      const text = decoder.decode(value, { stream: true });
      if (text) {
        onText(text);
      }
    }
    const rest = decoder.decode();
    if (rest) {
      onText(rest);
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    reader.releaseLock?.();
  }
}

/** Read at most `maxBytes` of a body, then cancel the rest. */
export async function readPrefix(
  response: Response,
  maxBytes: number
): Promise<{ text: string; truncated: boolean }> {
  const body = response.body;
  if (!body || typeof body.getReader !== 'function') {
    const text = await response.text();
    return text.length > maxBytes
      ? { text: text.slice(0, maxBytes), truncated: true }
      : { text, truncated: false };
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    chunks.push(value);
    total += value.byteLength;
    if (total >= maxBytes) {
      truncated = true;
      void reader.cancel().catch(() => undefined);
      break;
    }
  }
  const all = new Uint8Array(Math.min(total, maxBytes));
  let at = 0;
  for (const chunk of chunks) {
    const take = Math.min(chunk.byteLength, all.byteLength - at);
    all.set(chunk.subarray(0, take), at);
    at += take;
    if (at >= all.byteLength) {
      break;
    }
  }
  // Whether more followed is known only if we stopped early.
  return { text: new TextDecoder().decode(all), truncated };
}
