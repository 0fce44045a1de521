/**
 * The REST API's JSON, mirroring `jupyter_pai/backends/models.py` one to one.
 *
 * The server dumps its pydantic models with `by_alias=True`, so every field is
 * camelCase here; datetimes arrive as ISO 8601 strings. Optional Python fields
 * (`X | None`) are `X | null`, and may be left out.
 */

/** OpenPAI's job states. */
export const JOB_STATES = [
  'WAITING',
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'STOPPING',
  'STOPPED'
] as const;
export type JobState = (typeof JOB_STATES)[number];

export const TASK_STATES = [
  'WAITING',
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'STOPPED'
] as const;
export type TaskState = (typeof TASK_STATES)[number];

const TERMINAL: ReadonlySet<string> = new Set([
  'SUCCEEDED',
  'FAILED',
  'STOPPED'
]);

/** Whether a job or task state is final (`JobState.terminal` in Python). */
export function isTerminal(state: JobState | TaskState): boolean {
  return TERMINAL.has(state);
}

/** ISO 8601 date and time, as pydantic writes `datetime`. */
export type DateTime = string;

export interface Resources {
  gpu: number;
  cpu: number;
  /** `memoryMB`, as in the job protocol. */
  memoryMB: number;
}

export interface TaskStatus {
  role: string;
  index: number;
  state: TaskState;
  node?: string | null;
  ip?: string | null;
  gpuNumber: number;
  /** Device ids where the backend knows them (local); empty on Kubernetes. */
  gpus: string[];
  ports: Record<string, number[]>;
  exitCode?: number | null;
  exitReason?: string | null;
  retries: number;
  startedTime?: DateTime | null;
  completedTime?: DateTime | null;
}

export interface JobSummary {
  id: string;
  name: string;
  user: string;
  state: JobState;
  subState?: string | null;
  virtualCluster: string;
  retries: number;
  submissionTime: DateTime;
  launchedTime?: DateTime | null;
  completedTime?: DateTime | null;
  exitCode?: number | null;
  totalGpuNumber: number;
  totalTaskNumber: number;
  totalTaskRoleNumber: number;
  waitingReason?: string | null;
  /** `kernel`: the job of a remote kernel (shown with a badge, stoppable like a job). */
  kind?: JobKind;
}

export type JobKind = 'job' | 'kernel';

export interface JobDetail extends JobSummary {
  /** The protocol v2 job, as submitted (secrets removed by the server). */
  spec: Record<string, any>;
  tasks: TaskStatus[];
}

export interface JobEvent {
  time: DateTime;
  /** `Normal` or `Warning`, as in Kubernetes events. */
  type: string;
  reason: string;
  message: string;
  /** `job`, or `<role>-<index>` for a task. */
  source: string;
}

/**
 * One GPU type (`H100-80GB`, `A100-40GB-MIG-1g.5gb`) as a VC sees it: GPUs of
 * the type its jobs may use, held now, and free now.
 */
export interface GpuTypeUsage {
  name: string;
  /** The product the nodes report, e.g. `NVIDIA-A100-SXM4-40GB`. */
  product?: string | null;
  capacity: number;
  used: number;
  free: number;
}

export interface VirtualCluster {
  name: string;
  /** The most its jobs may hold at once: its guarantee plus what it may borrow. */
  capacity: Resources;
  used: Resources;
  /** What a job could start with now, preempting nobody. */
  free: Resources;
  runningJobs: number;
  queuedJobs: number;
  queued: Resources;
  /** GPUs the VC is guaranteed (null where the backend has no guarantee). */
  guaranteedGpus?: number | null;
  /** GPUs its jobs hold beyond the guarantee: taken back when the lender needs them. */
  borrowedGpus?: number;
  /** GPUs of its guarantee that other VCs' jobs hold on loan. */
  lentGpus?: number;
  mayBorrow?: boolean;
  mayLend?: boolean;
  description?: string | null;
  /** Its GPUs by type; empty or absent where GPUs are untyped. */
  gpuTypes?: GpuTypeUsage[];
}

export interface Image {
  name: string;
  uri: string;
  description?: string | null;
  gpu: boolean;
}

/** One tag of a registry's repository (the newest ones described, the rest by name). */
export interface ImageTag {
  name: string;
  /** `host/repository:tag`, pullable as is. */
  uri: string;
  digest?: string | null;
  created?: DateTime | null;
  /** Bytes: compressed layers and config. */
  size?: number | null;
  labels?: Record<string, string>;
  cuda?: string | null;
  /** E.g. `pytorch 2.4.0`. */
  framework?: string | null;
  /** Harbor's scan: Critical, High, Medium, Low, None, Unknown. */
  scanSeverity?: string | null;
  vulnerabilities?: number | null;
  /** GPU nodes already holding the image; null when unknown. */
  nodesWithImage?: number | null;
}

export interface ImageRepository {
  /** The registry's display name. */
  registry: string;
  name: string;
  /** `host[:port]/name`. */
  uri: string;
  /** Newest first. */
  tags: ImageTag[];
}

export interface RegistryStatus {
  name: string;
  url: string;
  kind: string;
  ok: boolean;
  /** The last good listing. */
  listedAt?: DateTime | null;
  error?: string | null;
  repositories: number;
  tags: number;
  /** A bound (repositories, tags) was hit. */
  truncated: boolean;
}

export interface Storage {
  name: string;
  mountPath: string;
  readOnly: boolean;
  description?: string | null;
}

export type StorageEntryType = 'file' | 'directory';

export interface StorageEntry {
  name: string;
  path: string;
  type: StorageEntryType;
  size?: number | null;
  modified?: DateTime | null;
}

export interface StorageListing {
  storage: string;
  path: string;
  type: StorageEntryType;
  entries: StorageEntry[];
}

/**
 * The header of `GET storage/{name}/{path}?notebook=1`: `true` where the
 * Jupyter server's notary knows the notebook's signature (its code cells come
 * marked trusted), `false` where not. `PUT …?notebook=1` saves one as Jupyter
 * does: without `trusted`, signed when every code cell is trusted.
 */
export const NOTEBOOK_TRUST_HEADER = 'X-Notebook-Trusted';

/** How far an upload has come (PUT and GET `?upload=1` answer it). */
export interface UploadState {
  storage: string;
  path: string;
  received: number;
  total?: number | null;
  /** The file is under its final name. */
  complete?: boolean;
}

export interface Info {
  backend: string;
  flavor?: string | null;
  version: string;
  user: string;
  namespace?: string | null;
  gpuSlots?: number | null;
  /** Tasks are processes of the server's machine (its files, its Python), not pods. */
  tasksRunHere?: boolean;
}

/**
 * The one envelope every list arrives in (`ItemList` in Python): `GET jobs`,
 * `jobs/{id}/events`, `virtual-clusters`, `images` and `storage`.
 */
export interface ItemList<T> {
  items: T[];
}

/**
 * `GET jobs`: newest first; `total` jobs match the filters; `continue` (null on
 * the last page) asks for the next page of `limit`.
 */
export interface JobList extends ItemList<JobSummary> {
  total?: number | null;
  continue?: string | null;
}

/** One event of the `job-changes` stream (server-sent events). */
export interface JobChange {
  type: 'added' | 'modified' | 'deleted';
  job: JobSummary;
}
export type JobEventList = ItemList<JobEvent>;
export type VirtualClusterList = ItemList<VirtualCluster>;
export type ImageList = ItemList<Image>;
/**
 * `GET images`: the admin's catalogue (`items`), the registries' repositories,
 * each registry's state, and whether any typed reference is allowed. Older
 * servers send `items` only.
 */
export interface ImageChoices extends ImageList {
  repositories?: ImageRepository[];
  registries?: RegistryStatus[];
  customImages?: boolean;
}
export type StorageList = ItemList<Storage>;

/** A node of the hardware view (this machine on the local backend). */
export interface NodeResources {
  name: string;
  gpuTotal: number;
  gpuUsed: number;
  gpuFree: number;
  cpuAllocatable: number;
  cpuRequested: number;
  memoryMBAllocatable: number;
  memoryMBRequested: number;
  jobs: string[];
  /** Measured use (%), `null` where not measured. */
  cpuPercent: number | null;
  memoryPercent: number | null;
  gpuPercent: number | null;
  /** Why CPU and memory use are not measured, if they are not. */
  utilisationNote: string | null;
}

export type NodeList = ItemList<NodeResources>;

/** A running job OpenPAI's rule flags (too long, idle GPUs). */
export interface AbnormalJob {
  job: JobSummary;
  reasons: string[];
  gpuPercentLastHour: number | null;
  mayStop: boolean;
}

export type AbnormalJobList = ItemList<AbnormalJob>;

/** GPU use at one time or over a window; `null`: not measured. */
export interface GpuUsage {
  gpuPercent: number | null;
  memoryMB: number | null;
}

export interface TaskUtilisation {
  role: string;
  index: number;
  gpuNumber: number;
  current: GpuUsage | null;
  lastHour: GpuUsage | null;
}

/** `GET jobs/{id}/utilisation`. */
export interface JobUtilisation {
  jobId: string;
  source: string | null;
  current: GpuUsage | null;
  lastHour: GpuUsage | null;
  tasks: TaskUtilisation[];
  note: string | null;
}

export interface JobFilter {
  vc?: string | null;
  state?: JobState[] | null;
  user?: string | null;
  keyword?: string | null;
}

/** `JobFilter.matches` in Python: the same test, for filtering on the client. */
export function matchesFilter(filter: JobFilter, job: JobSummary): boolean {
  if (filter.vc && job.virtualCluster !== filter.vc) {
    return false;
  }
  if (
    filter.state &&
    filter.state.length &&
    !filter.state.includes(job.state)
  ) {
    return false;
  }
  if (filter.user && job.user !== filter.user) {
    return false;
  }
  if (filter.keyword) {
    const needle = filter.keyword.toLowerCase();
    if (
      !job.name.toLowerCase().includes(needle) &&
      !job.id.toLowerCase().includes(needle)
    ) {
      return false;
    }
  }
  return true;
}

/** One problem at one place of the input (`jupyter_pai.errors.FieldError`). */
export interface FieldError {
  /** Dotted path such as `taskRoles.worker.resourcePerInstance.gpu`; may be empty. */
  path: string;
  message: string;
}

/** Something accepted but not taken as written, at the input's `path`. */
export interface FieldWarning {
  /** Dotted path such as `extras.com.microsoft.pai.runtimeplugin.0`; empty for the whole job. */
  path: string;
  message: string;
}

/** What `POST jobs` answers (201): the created job and its warnings. */
export interface SubmitResult {
  job: JobDetail;
  /** Ignored fields, "converted from an OpenPAI v1 job", plugins run differently… */
  warnings: FieldWarning[];
}

/** What `POST notebook-jobs` takes: a notebook of the server's tree to run as a job. */
export interface NotebookJobRequest {
  /** Relative to the server's root, as the file browser names it. */
  path: string;
  /** Injected as papermill does, after the cell tagged `parameters`. */
  params?: Record<string, string>;
  gpus?: number;
  /** The GPU type (`H100-80GB`); none: any. */
  gpuType?: string | null;
  vc?: string | null;
  image?: string | null;
  /** `NAME[/folder]`: write the executed notebook into this storage. */
  storage?: string | null;
  /** The job's name (default: the notebook's name and the time). */
  name?: string | null;
}

/** What `POST notebook-jobs` answers (201). */
export interface NotebookJobResult {
  job: JobDetail;
  warnings: FieldWarning[];
  /** The executed notebook's path in the file browser, when it is written there. */
  output?: string | null;
  /** Where the task writes it. */
  outputLocation: string;
}

/** The body of every error response (`PAIError.to_json`). */
export interface ErrorBody {
  message: string;
  errors: FieldError[];
}

/** The forms a job can be written in: protocol v2, the short form, OpenPAI v1 JSON. */
export const JOB_FORMATS = ['v2', 'short', 'v1'] as const;
export type JobFormat = (typeof JOB_FORMATS)[number];

/** What `POST convert` answers: the protocol-v2 document a job stands for. */
export interface ConvertResult {
  /** The form the job was written in. */
  format: JobFormat;
  /** The protocol-v2 document (secrets shown as `******`). */
  job: Record<string, any>;
  /** Ignored fields, "converted from an OpenPAI v1 job", unresolved markers… */
  warnings: FieldWarning[];
}

/** What the log endpoint's query selects. */
export interface LogQuery {
  role: string;
  index: number;
  /** The last N lines. */
  tail?: number;
  /** Byte range: start at `offset`, at most `limit` bytes. */
  offset?: number;
  limit?: number;
  /** An earlier attempt of the task (0 = its first); absent: the current one. */
  attempt?: number;
}

/** A slice of a task's log and the log's size when it was read. */
export interface LogChunk {
  text: string;
  /** First byte of `text` in the log, when known (byte-range reads). */
  offset: number | null;
  /** `X-Log-Size`: the log's size in bytes, when the server said. */
  size: number | null;
}
