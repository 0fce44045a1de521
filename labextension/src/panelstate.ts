/**
 * The panel's shared state: what the server said last, refreshed by one poll
 * that runs while JupyterLab is visible, and the signals the views listen to.
 */

import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { PAIClient } from './api';
import { PAIRequestError } from './apirequest';
import { EMPTY_CATALOGUE, type IImageCatalogue } from './imagecatalogue';
import { JobStream, type EventSourceFactory } from './jobstream';
import {
  isTerminal,
  type Image,
  type Info,
  type JobChange,
  type JobState,
  type JobSummary,
  type Storage,
  type VirtualCluster
} from './restmodels';
import type { JobForm } from './jobform';
import { JobValidator } from './validate';

/** A one-line description of any error, for panels ("cluster unreachable: …"). */
export function describeError(error: unknown): string {
  if (error instanceof PAIRequestError) {
    return error.describe();
  }
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}

/** The user's settings (schema/plugin.json). */
export interface IPAISettings {
  defaultVirtualCluster: string;
  defaultImage: string;
  /** Seconds between refreshes. */
  refreshInterval: number;
  notifications: boolean;
  /** KiB of a log the viewer reads at a time. */
  logChunkKiB: number;
}

export const DEFAULT_SETTINGS: IPAISettings = {
  defaultVirtualCluster: '',
  defaultImage: '',
  refreshInterval: 5,
  notifications: true,
  logChunkKiB: 512
};

/** A job of the user's that reached a final state while we watched. */
export interface IJobEnded {
  job: JobSummary;
  previous: JobState;
}

export type PanelSection = 'launch' | 'jobs' | 'storage' | 'cluster';

/** Polls while the change stream is up: a safety net, answered 304 mostly. */
export const STREAMING_POLL_MS = 60 * 1000;

/** Jobs the panel reads at first, and more per "Show more" (newest first). */
export const PAGE_SIZE = 100;

export class PAIModel {
  /**
   * @param eventSources how to open the job change stream (`undefined`: the
   * browser's EventSource; `null`: no stream, poll only).
   */
  constructor(
    readonly client: PAIClient = new PAIClient(),
    private readonly _eventSources?: EventSourceFactory | null
  ) {
    this._poll = new Poll({
      auto: false,
      factory: () => this.refresh(),
      frequency: {
        interval: DEFAULT_SETTINGS.refreshInterval * 1000,
        backoff: true,
        max: 60 * 1000
      },
      name: 'jupyter-pai:refresh',
      standby: 'when-hidden'
    });
  }

  /** Anything changed: info, virtual clusters, jobs, errors, section. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get jobEnded(): ISignal<this, IJobEnded> {
    return this._jobEnded;
  }

  /** The launch form should show this job (clone, import, new). */
  get formRequested(): ISignal<this, JobForm | null> {
    return this._formRequested;
  }

  /** A storage path to mount in the form being edited. */
  get mountRequested(): ISignal<this, { storage: string; path: string }> {
    return this._mountRequested;
  }

  get settings(): IPAISettings {
    return this._settings;
  }

  set settings(value: IPAISettings) {
    this._settings = { ...DEFAULT_SETTINGS, ...value };
    this._updateFrequency();
    this._changed.emit();
  }

  /**
   * Whether the side panel (or a view that lists jobs) is on screen. While it
   * is not, the poll slows down: the status bar and notifications still
   * update, at most every 30 s. While JupyterLab is hidden it stops.
   */
  get panelVisible(): boolean {
    return this._panelVisible;
  }

  set panelVisible(value: boolean) {
    if (value !== this._panelVisible) {
      this._panelVisible = value;
      this._updateFrequency();
      if (value) {
        void this._poll.refresh();
      }
    }
  }

  private _updateFrequency(): void {
    const interval = Math.max(1, this._settings.refreshInterval) * 1000;
    let wanted = this._panelVisible ? interval : Math.max(interval, 30000);
    if (this.streaming) {
      wanted = Math.max(wanted, STREAMING_POLL_MS);
    }
    this._poll.frequency = { ...this._poll.frequency, interval: wanted };
  }

  /** Whether job changes arrive over the stream (else the poll finds them). */
  get streaming(): boolean {
    return this._stream?.connected ?? false;
  }

  get info(): Info | null {
    return this._info;
  }

  /** Why GET info failed (the server extension or cluster is unreachable), or null. */
  get infoError(): string | null {
    return this._infoError;
  }

  get virtualClusters(): VirtualCluster[] {
    return this._vcs;
  }

  get images(): Image[] {
    return this._images;
  }

  /** The images and the registries' repositories the launch form offers. */
  get imageChoices(): IImageCatalogue {
    return this._imageChoices;
  }

  get storages(): Storage[] {
    return this._storages;
  }

  get jobs(): JobSummary[] {
    return this._jobs;
  }

  /** How many jobs the server lists in all; `jobs` holds the newest of them. */
  get jobsTotal(): number {
    return Math.max(this._jobsTotal, this._jobs.length);
  }

  /** Read the next page of older jobs too (and keep it on each poll). */
  async showMoreJobs(): Promise<void> {
    this._wanted = this._jobs.length + PAGE_SIZE;
    this._jobsEtag = null;
    await this.refreshNow();
  }

  /** Jobs and clusters were read at least once. */
  get loaded(): boolean {
    return this._loaded;
  }

  /** Why the last refresh failed, or null. */
  get error(): string | null {
    return this._error;
  }

  get lastRefresh(): Date | null {
    return this._lastRefresh;
  }

  get section(): PanelSection {
    return this._section;
  }

  set section(value: PanelSection) {
    if (value !== this._section) {
      this._section = value;
      this._changed.emit();
    }
  }

  virtualCluster(name: string): VirtualCluster | undefined {
    return this._vcs.find(vc => vc.name === name);
  }

  /** The current user's jobs (all jobs when the user is not known yet). */
  myJobs(): JobSummary[] {
    const user = this._info?.user;
    return user ? this._jobs.filter(j => j.user === user) : this._jobs;
  }

  /** Start refreshing (once the settings are read). */
  async start(): Promise<void> {
    await this.refreshCatalogues();
    void this._poll.start();
    this._stream = new JobStream({
      url: this.client.jobChangesUrl(),
      factory: this._eventSources,
      onReady: () => {
        // Subscribed: one list catches what changed before, the stream the rest.
        this._updateFrequency();
        void this._poll.refresh();
      },
      onChange: change => this.applyChange(change),
      onDown: () => {
        this._updateFrequency();
        void this._poll.refresh();
      }
    });
    this._stream.start();
  }

  /** A change from the stream: the list updates now, the clusters' use soon. */
  applyChange(change: JobChange): void {
    const { job } = change;
    if (change.type === 'deleted') {
      this._jobs = this._jobs.filter(j => j.id !== job.id);
      this._states.delete(job.id);
      this._jobsTotal = Math.max(0, this._jobsTotal - 1);
    } else {
      if (change.type === 'added') {
        this._jobsTotal += 1;
      }
      this._noticeEnded([job]);
      const others = this._jobs.filter(j => j.id !== job.id);
      // Newest first, as the server lists them.
      const at = others.findIndex(
        j =>
          j.submissionTime < job.submissionTime ||
          (j.submissionTime === job.submissionTime && j.id < job.id)
      );
      others.splice(at < 0 ? others.length : at, 0, job);
      this._jobs = others;
    }
    this._jobsEtag = null; // the next poll reads the list whole
    this._changed.emit();
    window.clearTimeout(this._vcTimer);
    this._vcTimer = window.setTimeout(() => void this._refreshClusters(), 1000);
  }

  private async _refreshClusters(): Promise<void> {
    try {
      this._vcs = await this.client.virtualClusters();
      this._changed.emit();
    } catch {
      // The next poll says what failed.
    }
  }

  /** Refresh now (the refresh button, after a submit or stop). */
  async refreshNow(): Promise<void> {
    await this._poll.refresh();
    await this._poll.tick;
  }

  /** Info, images and storages change rarely: read them at start and on demand. */
  async refreshCatalogues(): Promise<void> {
    try {
      this._info = await this.client.info();
      this._infoError = null;
    } catch (error) {
      this._infoError = describeError(error);
    }
    const [images, storages] = await Promise.allSettled([
      this.client.imageChoices(),
      this.client.storages()
    ]);
    if (images.status === 'fulfilled') {
      this._imageChoices = images.value;
      this._images = images.value.items;
    }
    if (storages.status === 'fulfilled') {
      this._storages = storages.value;
    }
    this._changed.emit();
  }

  /** Refresh everything: info, images and storages, then jobs and clusters (the Refresh command). */
  async refreshInfo(): Promise<void> {
    await this.refreshCatalogues();
    await this.refreshNow();
  }

  /** One poll: jobs and virtual clusters. Throws so the poll backs off. */
  async refresh(): Promise<void> {
    try {
      const [listed, vcs] = await Promise.all([
        this.client.jobsIfChanged(this._jobsEtag, {}, this._wanted),
        this.client.virtualClusters()
      ]);
      if (this._infoError) {
        // The server came back: read what we could not before.
        void this.refreshCatalogues();
      }
      if (listed) {
        // Else 304: the list we have still holds.
        this._noticeEnded(listed.items);
        this._jobs = listed.items;
        this._jobsEtag = listed.etag;
        this._jobsTotal = listed.total;
      }
      this._vcs = vcs;
      this._error = null;
      this._loaded = true;
      this._lastRefresh = new Date();
      this._changed.emit();
    } catch (error) {
      this._error = describeError(error);
      this._changed.emit();
      throw error;
    }
  }

  /** The schema validator, fetched once (null while unavailable). */
  async validator(): Promise<JobValidator | null> {
    if (!this._validator) {
      this._validator = this.client
        .schema()
        .then(schema => new JobValidator(schema))
        .catch(error => {
          this._validator = null;
          console.warn('jupyter-pai: no job schema for validation', error);
          return null;
        });
    }
    return this._validator;
  }

  requestForm(form: JobForm | null): void {
    this.section = 'launch';
    this._formRequested.emit(form);
  }

  requestMount(storage: string, path: string): void {
    this.section = 'launch';
    this._mountRequested.emit({ storage, path });
  }

  /** Update one job in the list at once (after stop), before the next poll. */
  updateJob(job: JobSummary): void {
    this._jobsEtag = null;
    const i = this._jobs.findIndex(j => j.id === job.id);
    if (i >= 0) {
      this._jobs = [...this._jobs];
      this._jobs[i] = { ...this._jobs[i], ...job };
    } else {
      this._jobs = [job, ...this._jobs];
    }
    this._changed.emit();
  }

  dispose(): void {
    this._stream?.dispose();
    window.clearTimeout(this._vcTimer);
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _noticeEnded(jobs: JobSummary[]): void {
    const user = this._info?.user;
    for (const job of jobs) {
      const previous = this._states.get(job.id);
      if (
        previous !== undefined &&
        !isTerminal(previous) &&
        isTerminal(job.state) &&
        (!user || job.user === user)
      ) {
        this._jobEnded.emit({ job, previous });
      }
      this._states.set(job.id, job.state);
    }
  }

  private _poll: Poll;
  private _settings: IPAISettings = DEFAULT_SETTINGS;
  private _info: Info | null = null;
  private _infoError: string | null = null;
  private _vcs: VirtualCluster[] = [];
  private _images: Image[] = [];
  private _imageChoices: IImageCatalogue = EMPTY_CATALOGUE;
  private _storages: Storage[] = [];
  private _jobs: JobSummary[] = [];
  private _jobsTotal = 0;
  // The newest jobs the panel reads: a page, and one more per "Show more".
  private _wanted = PAGE_SIZE;
  private _jobsEtag: string | null = null;
  private _stream: JobStream | null = null;
  private _vcTimer = 0;
  private _loaded = false;
  private _error: string | null = null;
  private _lastRefresh: Date | null = null;
  private _section: PanelSection = 'jobs';
  private _panelVisible = true;
  private _states = new Map<string, JobState>();
  private _validator: Promise<JobValidator | null> | null = null;
  private _changed = new Signal<this, void>(this);
  private _jobEnded = new Signal<this, IJobEnded>(this);
  private _formRequested = new Signal<this, JobForm | null>(this);
  private _mountRequested = new Signal<this, { storage: string; path: string }>(
    this
  );
}
