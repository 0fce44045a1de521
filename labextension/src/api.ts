/**
 * The typed client of the REST API under `<base>/pai/api/` (see "REST API" in
 * `docs/design.md`): one method per endpoint, every request through
 * `requestRaw` (`apirequest.ts`), so tests fake one `fetch`.
 */

import { ServerConnection } from '@jupyterlab/services';

import {
  apiUrl,
  encodePath,
  headerNumber,
  queryString,
  readPrefix,
  readStream,
  requestAPI,
  requestRaw
} from './apirequest';
import { withCatalogueFields, type IImageCatalogue } from './imagecatalogue';
import type {
  AbnormalJob,
  AbnormalJobList,
  ConvertResult,
  Image,
  ImageChoices,
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
} from './restmodels';

/** The largest page `GET jobs` gives (`limit`); a longer read follows `continue`. */
export const MAX_PAGE = 1000;

/** A read of `GET jobs`: the newest jobs asked for, the list's tag, and how many there are in all. */
export interface JobsRead {
  items: JobSummary[];
  etag: string | null;
  total: number;
}

/** A POST of a job: its text as written (YAML, which JSON also is), or an object as JSON. */
function postJob(spec: string | Record<string, any>): RequestInit {
  const isText = typeof spec === 'string';
  return {
    method: 'POST',
    body: isText ? spec : JSON.stringify(spec),
    headers: { 'Content-Type': isText ? 'text/yaml' : 'application/json' }
  };
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

  /** `GET images` whole: the catalogue, the registries' repositories and their state. */
  async imageChoices(): Promise<IImageCatalogue> {
    return withCatalogueFields(await this.request<ImageChoices>('images'));
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
    return this.request<SubmitResult>('jobs', postJob(spec));
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
   *   (`taskRoles.0.portList.0.beginAt` for a v1 job).
   */
  convertJob(spec: string | Record<string, any>): Promise<ConvertResult> {
    return this.request<ConvertResult>('convert', postJob(spec));
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
