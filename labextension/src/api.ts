/**
 * The typed client of the REST API under `<base>/pai/api/` (design §4).
 *
 * Every request goes through one function, `requestRaw`, over
 * `ServerConnection.makeRequest`, so authentication, the XSRF header and the
 * error mapping live in one place and tests mock one module.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type {
  AbnormalJob,
  AbnormalJobList,
  ConvertResult,
  ErrorBody,
  FieldError,
  Image,
  ImageList,
  Info,
  JobDetail,
  JobEvent,
  JobEventList,
  JobUtilisation,
  JobFilter,
  JobList,
  JobSummary,
  LogChunk,
  LogQuery,
  NodeList,
  NodeResources,
  NotebookJobRequest,
  NotebookJobResult,
  Storage,
  StorageList,
  StorageListing,
  SubmitResult,
  VirtualCluster,
  VirtualClusterList
} from './models';

/** The server extension's URL prefix, below the server's base URL. */
export const API_NAMESPACE = 'pai/api';

/** The largest page `GET jobs` gives (`limit`); a longer read follows `continue`. */
export const MAX_PAGE = 1000;

/** A read of `GET jobs`: the newest jobs asked for, the list's tag, and how many there are in all. */
export interface JobsRead {
  items: JobSummary[];
  etag: string | null;
  total: number;
}

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

function headerNumber(response: Response, name: string): number | null {
  const value = response.headers.get(name);
  if (value === null || value === '') {
    return null;
  }
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/** What GET storage/{name}/{path} answered: a listing or a file's text. */
export type StorageContent =
  | { kind: 'directory'; listing: StorageListing }
  | {
      kind: 'file';
      text: string;
      contentType: string;
      /** True when only the first `maxBytes` were read. */
      truncated: boolean;
    };

/**
 * The REST API as typed methods. Stateless apart from the server settings.
 */
export class PAIClient {
  constructor(
    readonly serverSettings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  request<T>(endPoint: string, init: RequestInit = {}): Promise<T> {
    return requestAPI<T>(endPoint, init, this.serverSettings);
  }

  raw(endPoint: string, init: RequestInit = {}): Promise<Response> {
    return requestRaw(endPoint, init, this.serverSettings);
  }

  url(endPoint: string): string {
    return apiUrl(endPoint, this.serverSettings);
  }

  /** A URL a browser can open directly (download links): token added if any. */
  downloadUrl(endPoint: string): string {
    const url = this.url(endPoint);
    const token = this.serverSettings.token;
    if (!token) {
      return url;
    }
    return `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
  }

  info(): Promise<Info> {
    return this.request<Info>('info');
  }

  async virtualClusters(): Promise<VirtualCluster[]> {
    return (await this.request<VirtualClusterList>('virtual-clusters')).items;
  }

  async images(): Promise<Image[]> {
    return (await this.request<ImageList>('images')).items;
  }

  /** The job protocol's JSON Schema (for validating YAML as it is typed). */
  schema(): Promise<Record<string, any>> {
    return this.request<Record<string, any>>('schema');
  }

  async jobs(filter: JobFilter = {}): Promise<JobSummary[]> {
    return (await this.jobsIfChanged(null, filter))?.items ?? [];
  }

  /**
   * `GET jobs` as a conditional request: `null` when the server answers 304
   * (the list tagged `etag` still holds), else the list, its new tag and the
   * number of jobs in all. With `wanted`, only the newest `wanted` jobs are
   * read, in pages of at most `MAX_PAGE` (the tag is the first page's).
   */
  async jobsIfChanged(
    etag: string | null,
    filter: JobFilter = {},
    wanted?: number
  ): Promise<JobsRead | null> {
    const filters = {
      vc: filter.vc,
      state: filter.state ?? undefined,
      user: filter.user,
      keyword: filter.keyword
    };
    const pageOf = (have: number, token?: string): string =>
      wanted === undefined
        ? queryString(filters)
        : queryString({
            ...filters,
            limit: String(Math.min(MAX_PAGE, Math.max(1, wanted - have))),
            continue: token
          });
    const init: RequestInit = etag
      ? { headers: { 'If-None-Match': etag } }
      : {};
    const response = await this.raw(`jobs${pageOf(0)}`, init);
    if (response.status === 304) {
      return null;
    }
    const first = (await response.json()) as JobList;
    const items = [...first.items];
    let token = first.continue ?? null;
    while (wanted !== undefined && token && items.length < wanted) {
      const page = await this.request<JobList>(
        `jobs${pageOf(items.length, token)}`
      );
      items.push(...page.items);
      token = page.continue ?? null;
    }
    return {
      items,
      etag: response.headers.get('ETag'),
      total: first.total ?? items.length
    };
  }

  /** The URL of the job change stream (server-sent events), token added if any. */
  jobChangesUrl(): string {
    return this.downloadUrl('job-changes');
  }

  /**
   * Submit a job: protocol v2 YAML text (sent as `text/yaml`) or an object
   * (sent as JSON). Resolves to the created job and the warnings about what
   * was not taken as written (201).
   */
  submitJob(spec: string | Record<string, any>): Promise<SubmitResult> {
    const isText = typeof spec === 'string';
    return this.request<SubmitResult>('jobs', {
      method: 'POST',
      body: isText ? spec : JSON.stringify(spec),
      headers: {
        'Content-Type': isText ? 'text/yaml' : 'application/json'
      }
    });
  }

  /**
   * Run a notebook of the server's tree as a job; the executed notebook is
   * written beside it (`output`) or into a storage.
   */
  submitNotebook(request: NotebookJobRequest): Promise<NotebookJobResult> {
    return this.request<NotebookJobResult>('notebook-jobs', {
      method: 'POST',
      body: JSON.stringify(request),
      headers: { 'Content-Type': 'application/json' }
    });
  }

  /**
   * The protocol-v2 document a job stands for, without submitting it: YAML or
   * JSON text (sent as `text/yaml`; JSON is YAML) or an object. The server
   * converts OpenPAI v1 jobs and expands the short form, so the panel has no
   * converter of its own.
   *
   * @throws PAIRequestError a 400 whose `errors` name the fields as written
   *   (`taskRoles.0.gpuType` for a v1 job).
   */
  convertJob(spec: string | Record<string, any>): Promise<ConvertResult> {
    const isText = typeof spec === 'string';
    return this.request<ConvertResult>('convert', {
      method: 'POST',
      body: isText ? spec : JSON.stringify(spec),
      headers: {
        'Content-Type': isText ? 'text/yaml' : 'application/json'
      }
    });
  }

  job(id: string): Promise<JobDetail> {
    return this.request<JobDetail>(`jobs/${encodeURIComponent(id)}`);
  }

  /** Stop a job; it stays listed as STOPPING, then STOPPED. */
  async stopJob(id: string): Promise<JobDetail | undefined> {
    return this.request<JobDetail | undefined>(
      `jobs/${encodeURIComponent(id)}`,
      { method: 'DELETE' }
    );
  }

  /** The hardware view: nodes with GPUs, CPU and memory requested, and their jobs. */
  async nodes(): Promise<NodeResources[]> {
    return (await this.request<NodeList>('nodes')).items;
  }

  /** Running jobs flagged abnormal, with why and whether this user may stop them. */
  async abnormalJobs(): Promise<AbnormalJob[]> {
    return (await this.request<AbnormalJobList>('abnormal-jobs')).items;
  }

  /** GPU use per task and for the job (`null` where not measured, with a note). */
  utilisation(id: string): Promise<JobUtilisation> {
    return this.request<JobUtilisation>(
      `jobs/${encodeURIComponent(id)}/utilisation`
    );
  }

  async events(id: string): Promise<JobEvent[]> {
    return (
      await this.request<JobEventList>(`jobs/${encodeURIComponent(id)}/events`)
    ).items;
  }

  logsEndpoint(
    id: string,
    query: Partial<LogQuery> & { follow?: boolean }
  ): string {
    return `jobs/${encodeURIComponent(id)}/logs${queryString({
      role: query.role,
      index: query.index,
      tail: query.tail,
      offset: query.offset,
      limit: query.limit,
      attempt: query.attempt,
      follow: query.follow ? 'true' : undefined
    })}`;
  }

  /**
   * Read part of a task's log: the last `tail` lines, or `limit` bytes from
   * `offset`. Never asks for the whole log unless neither is given.
   */
  async logs(
    id: string,
    query: LogQuery,
    signal?: AbortSignal
  ): Promise<LogChunk> {
    const response = await this.raw(this.logsEndpoint(id, query), { signal });
    const text = await response.text();
    return {
      text,
      offset: query.offset ?? null,
      size: headerNumber(response, 'X-Log-Size')
    };
  }

  /**
   * Read a byte range of a task's log as bytes (the log viewer cuts it at
   * line ends itself, so offsets stay exact). `limit: 0` only asks the size.
   */
  async logBytes(
    id: string,
    query: {
      role: string;
      index: number;
      offset: number;
      limit: number;
      attempt?: number;
    },
    signal?: AbortSignal
  ): Promise<{ bytes: Uint8Array; size: number | null }> {
    const response = await this.raw(this.logsEndpoint(id, query), { signal });
    const bytes = new Uint8Array(await response.arrayBuffer());
    return { bytes, size: headerNumber(response, 'X-Log-Size') };
  }

  /**
   * Follow a task's log as it is written (`follow=true`, a streamed
   * response). Calls `onText` with each decoded piece; resolves when the
   * stream ends (the task finished) and rejects with an AbortError when
   * `signal` aborts.
   */
  async followLogs(
    id: string,
    query: { role: string; index: number; tail?: number; offset?: number },
    onText: (text: string) => void,
    signal?: AbortSignal
  ): Promise<void> {
    const response = await this.raw(
      this.logsEndpoint(id, { ...query, follow: true }),
      { signal }
    );
    await readStream(response, onText, signal);
  }

  async storages(): Promise<Storage[]> {
    return (await this.request<StorageList>('storage')).items;
  }

  storageEndpoint(name: string, path = ''): string {
    const rest = encodePath(path);
    return `storage/${encodeURIComponent(name)}${rest ? `/${rest}` : ''}`;
  }

  /**
   * A directory listing, or the first `maxBytes` of a file (previews never
   * read a large file whole).
   */
  async storageContent(
    name: string,
    path = '',
    maxBytes = 256 * 1024,
    signal?: AbortSignal
  ): Promise<StorageContent> {
    const response = await this.raw(this.storageEndpoint(name, path), {
      signal
    });
    const contentType = response.headers.get('Content-Type') ?? '';
    const { text, truncated } = await readPrefix(response, maxBytes);
    if (contentType.includes('application/json')) {
      try {
        const data = JSON.parse(text);
        if (
          data &&
          typeof data === 'object' &&
          Array.isArray(data.entries) &&
          data.type !== 'file'
        ) {
          return { kind: 'directory', listing: data as StorageListing };
        }
      } catch {
        // A JSON file cut at maxBytes: show it as text.
      }
    }
    return { kind: 'file', text, contentType, truncated };
  }
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
