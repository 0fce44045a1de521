import type {
  AbnormalJob,
  AbnormalJobList,
  ConvertResult,
  FieldWarning,
  GpuTypeUsage,
  GpuUsage,
  Image,
  ImageChoices,
  ImageList,
  ImageRepository,
  ImageTag,
  Info,
  JobChange,
  JobDetail,
  JobEvent,
  JobEventList,
  JobList,
  JobSummary,
  JobUtilisation,
  NodeList,
  NodeResources,
  NotebookJobRequest,
  NotebookJobResult,
  RegistryStatus,
  Resources,
  Storage,
  StorageEntry,
  StorageList,
  StorageListing,
  SubmitResult,
  TaskStatus,
  TaskUtilisation,
  UploadState,
  VirtualCluster,
  VirtualClusterList
} from '../restmodels';
import type {
  MissingPermission,
  Reachability,
  SelfCheck
} from '../clustercheck';

type Fields<T> = { [K in keyof Required<T>]: true };

/** A job summary's fields: a job detail has them all, and its spec and tasks. */
const JOB_SUMMARY = {
  id: true,
  name: true,
  user: true,
  state: true,
  subState: true,
  virtualCluster: true,
  retries: true,
  submissionTime: true,
  launchedTime: true,
  completedTime: true,
  exitCode: true,
  totalGpuNumber: true,
  totalTaskNumber: true,
  totalTaskRoleNumber: true,
  waitingReason: true,
  kind: true
} satisfies Fields<JobSummary>;

/**
 * Every field of every model. `satisfies` checks these lists against the
 * interfaces of `restmodels.ts` when compiling, and a test checks them against the
 * server's OpenAPI components (generated from the pydantic models), so the
 * two sides cannot drift apart silently.
 */
export const MODEL_FIELDS = {
  Info: {
    backend: true,
    flavor: true,
    version: true,
    user: true,
    namespace: true,
    gpuSlots: true,
    tasksRunHere: true
  } satisfies Fields<Info>,
  Resources: {
    gpu: true,
    cpu: true,
    memoryMB: true
  } satisfies Fields<Resources>,
  VirtualCluster: {
    name: true,
    capacity: true,
    used: true,
    free: true,
    runningJobs: true,
    queuedJobs: true,
    queued: true,
    guaranteedGpus: true,
    borrowedGpus: true,
    lentGpus: true,
    mayBorrow: true,
    mayLend: true,
    description: true,
    gpuTypes: true
  } satisfies Fields<VirtualCluster>,
  GpuTypeUsage: {
    name: true,
    product: true,
    capacity: true,
    used: true,
    free: true
  } satisfies Fields<GpuTypeUsage>,
  Image: {
    name: true,
    uri: true,
    description: true,
    gpu: true
  } satisfies Fields<Image>,
  JobSummary: JOB_SUMMARY,
  TaskStatus: {
    role: true,
    index: true,
    state: true,
    node: true,
    ip: true,
    gpuNumber: true,
    gpus: true,
    ports: true,
    exitCode: true,
    exitReason: true,
    retries: true,
    startedTime: true,
    completedTime: true
  } satisfies Fields<TaskStatus>,
  JobDetail: {
    ...JOB_SUMMARY,
    spec: true,
    tasks: true
  } satisfies Fields<JobDetail>,
  JobEvent: {
    time: true,
    type: true,
    reason: true,
    message: true,
    source: true
  } satisfies Fields<JobEvent>,
  Storage: {
    name: true,
    mountPath: true,
    readOnly: true,
    description: true
  } satisfies Fields<Storage>,
  StorageEntry: {
    name: true,
    path: true,
    type: true,
    size: true,
    modified: true
  } satisfies Fields<StorageEntry>,
  StorageListing: {
    storage: true,
    path: true,
    type: true,
    entries: true
  } satisfies Fields<StorageListing>,
  UploadState: {
    storage: true,
    path: true,
    received: true,
    total: true,
    complete: true
  } satisfies Fields<UploadState>,
  FieldWarning: {
    path: true,
    message: true
  } satisfies Fields<FieldWarning>,
  ConvertResult: {
    format: true,
    job: true,
    warnings: true
  } satisfies Fields<ConvertResult>,
  SubmitResult: {
    job: true,
    warnings: true
  } satisfies Fields<SubmitResult>,
  NotebookJobRequest: {
    path: true,
    params: true,
    gpus: true,
    gpuType: true,
    vc: true,
    image: true,
    storage: true,
    name: true
  } satisfies Fields<NotebookJobRequest>,
  NotebookJobResult: {
    job: true,
    warnings: true,
    output: true,
    outputLocation: true
  } satisfies Fields<NotebookJobResult>,
  JobList: {
    items: true,
    total: true,
    continue: true
  } satisfies Fields<JobList>,
  JobChange: { type: true, job: true } satisfies Fields<JobChange>,
  JobEventList: { items: true } satisfies Fields<JobEventList>,
  VirtualClusterList: { items: true } satisfies Fields<VirtualClusterList>,
  ImageList: { items: true } satisfies Fields<ImageList>,
  ImageTag: {
    name: true,
    uri: true,
    digest: true,
    created: true,
    size: true,
    labels: true,
    cuda: true,
    framework: true,
    scanSeverity: true,
    vulnerabilities: true,
    nodesWithImage: true
  } satisfies Fields<ImageTag>,
  ImageRepository: {
    registry: true,
    name: true,
    uri: true,
    tags: true
  } satisfies Fields<ImageRepository>,
  RegistryStatus: {
    name: true,
    url: true,
    kind: true,
    ok: true,
    listedAt: true,
    error: true,
    repositories: true,
    tags: true,
    truncated: true
  } satisfies Fields<RegistryStatus>,
  ImageChoices: {
    items: true,
    repositories: true,
    registries: true,
    customImages: true
  } satisfies Fields<ImageChoices>,
  StorageList: { items: true } satisfies Fields<StorageList>,
  AbnormalJob: {
    job: true,
    reasons: true,
    gpuPercentLastHour: true,
    mayStop: true
  } satisfies Fields<AbnormalJob>,
  AbnormalJobList: { items: true } satisfies Fields<AbnormalJobList>,
  NodeResources: {
    name: true,
    gpuTotal: true,
    gpuUsed: true,
    gpuFree: true,
    cpuAllocatable: true,
    cpuRequested: true,
    memoryMBAllocatable: true,
    memoryMBRequested: true,
    jobs: true,
    cpuPercent: true,
    memoryPercent: true,
    gpuPercent: true,
    utilisationNote: true
  } satisfies Fields<NodeResources>,
  NodeList: { items: true } satisfies Fields<NodeList>,
  GpuUsage: { gpuPercent: true, memoryMB: true } satisfies Fields<GpuUsage>,
  TaskUtilisation: {
    role: true,
    index: true,
    gpuNumber: true,
    current: true,
    lastHour: true
  } satisfies Fields<TaskUtilisation>,
  JobUtilisation: {
    jobId: true,
    source: true,
    current: true,
    lastHour: true,
    tasks: true,
    note: true
  } satisfies Fields<JobUtilisation>,
  MissingPermission: {
    group: true,
    resource: true,
    verb: true,
    namespace: true,
    why: true,
    message: true
  } satisfies Fields<MissingPermission>,
  Reachability: {
    name: true,
    ok: true,
    detail: true
  } satisfies Fields<Reachability>,
  SelfCheck: {
    backend: true,
    flavor: true,
    namespace: true,
    user: true,
    ok: true,
    checked: true,
    missing: true,
    reachability: true,
    note: true
  } satisfies Fields<SelfCheck>
};
