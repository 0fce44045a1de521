/**
 * The launch form: virtual cluster, image, task roles, parameters, storages,
 * gang; or the same job as protocol v2 YAML, validated as it is typed.
 */

import { Notification } from '@jupyterlab/apputils';
import { closeIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { PAIRequestError } from './api';
import { emitNotice } from './fielderrorlist';
import {
  displayPath,
  importJob,
  importJobFile,
  importNotice,
  JobFileError,
  type ImportedJob
} from './jobfile';
import { jobFormat } from './jobformat';
import type {
  FieldError,
  JobDetail,
  JobFormat,
  VirtualCluster
} from './models';
import { describeError, PAIModel } from './model';
import {
  assignErrors,
  catalogueEntry,
  checkForm,
  formToSpec,
  newJobForm,
  newRole,
  specToForm,
  specToYaml,
  totalGpus,
  uniqueRoleName,
  yamlToSpec,
  type JobForm,
  type MountForm,
  type RoleForm
} from './spec';
import {
  locateErrors,
  validateYaml,
  type JobValidator,
  type LocatedError
} from './validate';

type Mode = 'form' | 'yaml';

export interface ILaunchFormProps {
  model: PAIModel;
  /** Called with the created job (to open its detail). */
  onSubmitted?: (job: JobDetail) => void;
}

/** Field paths the form shows, for matching server errors to fields. */
export function formFieldPaths(form: JobForm): string[] {
  const paths = [
    'name',
    'defaults.virtualCluster',
    'defaults',
    'prerequisites',
    'jobRetryCount',
    'parameters',
    'extras.gangAllocation',
    'extras.storages',
    'taskRoles'
  ];
  form.storages.forEach((_, i) => {
    paths.push(
      `extras.storages.${i}`,
      `extras.storages.${i}.name`,
      `extras.storages.${i}.mountPath`
    );
  });
  for (const role of form.roles) {
    const at = `taskRoles.${role.name}`;
    paths.push(
      at,
      `${at}.instances`,
      `${at}.resourcePerInstance.cpu`,
      `${at}.resourcePerInstance.memoryMB`,
      `${at}.resourcePerInstance.gpu`,
      `${at}.resourcePerInstance.ports`,
      `${at}.commands`,
      `${at}.taskRetryCount`,
      `${at}.dockerImage`
    );
  }
  return paths;
}

/** The form with the virtual cluster and image the server lists where it has none. */
function withCatalogueDefaults(form: JobForm, model: PAIModel): JobForm {
  const vcs = model.virtualClusters;
  const images = model.images;
  let next = form;
  if (!next.virtualCluster && vcs.length) {
    const preferred =
      vcs.find(v => v.name === model.settings.defaultVirtualCluster) ??
      [...vcs].sort((a, b) => b.free.gpu - a.free.gpu)[0];
    next = { ...next, virtualCluster: preferred.name };
  }
  if (!next.image && images.length) {
    const wanted = catalogueEntry(images, model.settings.defaultImage);
    next = { ...next, image: (wanted ?? images[0]).uri };
  }
  const named = catalogueEntry(images, next.image);
  if (named && named.uri !== next.image) {
    next = { ...next, image: named.uri };
  }
  return next;
}

let fieldCounter = 0;

function useFieldId(prefix: string): string {
  const ref = React.useRef<string>();
  if (!ref.current) {
    ref.current = `jp-PAI-${prefix}-${++fieldCounter}`;
  }
  return ref.current;
}

/** A labelled field with its errors underneath (aria-describedby). */
function Field(props: {
  label: string;
  path: string;
  errors: Map<string, FieldError[]>;
  hint?: React.ReactNode;
  children: (id: string, describedBy: string | undefined) => React.ReactNode;
  className?: string;
}): JSX.Element {
  const id = useFieldId('field');
  const errors = props.errors.get(props.path) ?? [];
  const errorId = errors.length ? `${id}-errors` : undefined;
  return (
    <div
      className={`jp-PAI-field ${props.className ?? ''} ${errors.length ? 'jp-mod-invalid' : ''}`}
      data-path={props.path}
    >
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, errorId)}
      {props.hint && <div className="jp-PAI-hint">{props.hint}</div>}
      {errors.length > 0 && (
        <ul className="jp-PAI-field-errors" id={errorId} role="alert">
          {errors.map((e, i) => (
            <li key={i}>{e.message}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Errors the server or the checks report for a whole section (a path with no one field). */
function SectionErrors(props: {
  errors: Map<string, FieldError[]>;
  path: string;
}): JSX.Element {
  return (
    <>
      {(props.errors.get(props.path) ?? []).map((e, i) => (
        <div key={i} className="jp-PAI-field-errors" role="alert">
          {e.message}
        </div>
      ))}
    </>
  );
}

/** A labelled number input; `parse` turns its text into the form's value (whole numbers by default). */
function NumberField(props: {
  label: string;
  path: string;
  errors: Map<string, FieldError[]>;
  value: number;
  onChange: (value: number) => void;
  min?: number;
  max?: number;
  step?: number | 'any';
  parse?: (text: string) => number;
}): JSX.Element {
  const parse = props.parse ?? ((text: string) => intValue(text, 0));
  return (
    <Field label={props.label} path={props.path} errors={props.errors}>
      {(id, d) => (
        <input
          id={id}
          aria-describedby={d}
          type="number"
          min={props.min}
          max={props.max}
          step={props.step}
          className="jp-mod-styled jp-PAI-input jp-PAI-number"
          value={props.value}
          onChange={e => props.onChange(parse(e.target.value))}
        />
      )}
    </Field>
  );
}

/** A whole number of at least 0 (and at most `max`), for counts the form never lets go negative. */
function countValue(text: string, max?: number): number {
  return Math.min(max ?? Infinity, Math.max(0, intValue(text, 0)));
}

function intValue(text: string, fallback = 0): number {
  const n = parseInt(text, 10);
  return Number.isFinite(n) ? n : fallback;
}

function floatValue(text: string, fallback = 0): number {
  const n = parseFloat(text);
  return Number.isFinite(n) ? n : fallback;
}

function vcLabel(vc: VirtualCluster): string {
  const queued = vc.queuedJobs ? `, ${vc.queuedJobs} waiting` : '';
  // OpenPAI's VC sharing: a borrower's capacity counts other VCs' idle GPUs; a
  // lender's own job takes lent GPUs back by preempting the borrower.
  const borrows = vc.mayBorrow
    ? ` (${vc.guaranteedGpus ?? 0} guaranteed, more borrowed while idle)`
    : '';
  const lent = vc.lentGpus
    ? `, ${vc.lentGpus} lent out (taken back for your job)`
    : '';
  return `${vc.name} — ${vc.free.gpu} of ${vc.capacity.gpu} GPUs free${borrows}${lent}${queued}`;
}

/** Ports as `label:count` pairs separated by commas or spaces. */
function PortsInput(props: {
  id: string;
  describedBy?: string;
  ports: RoleForm['ports'];
  onChange: (ports: RoleForm['ports']) => void;
}): JSX.Element {
  const [text, setText] = React.useState(
    props.ports.map(p => `${p.label}:${p.count}`).join(', ')
  );
  return (
    <input
      id={props.id}
      aria-describedby={props.describedBy}
      className="jp-mod-styled jp-PAI-input"
      placeholder="http:1, ssh:1"
      value={text}
      onChange={e => {
        setText(e.target.value);
        const ports = e.target.value
          .split(/[\s,]+/)
          .filter(Boolean)
          .map(pair => {
            const [label, count] = pair.split(':');
            return { label, count: count ? intValue(count, 1) : 1 };
          });
        props.onChange(ports);
      }}
    />
  );
}

function RoleEditor(props: {
  role: RoleForm;
  index: number;
  canRemove: boolean;
  vc: VirtualCluster | undefined;
  errors: Map<string, FieldError[]>;
  onChange: (role: RoleForm) => void;
  onRemove: () => void;
}): JSX.Element {
  const { role, vc, errors } = props;
  const at = `taskRoles.${role.name}`;
  const set = (patch: Partial<RoleForm>) =>
    props.onChange({ ...role, ...patch });
  const maxGpu = vc ? vc.capacity.gpu : undefined;
  return (
    <fieldset className="jp-PAI-role" aria-label={`task role ${role.name}`}>
      <legend>Task role {props.index + 1}</legend>
      <div className="jp-PAI-row">
        <Field
          label="Role name"
          path={at}
          errors={errors}
          className="jp-PAI-grow"
        >
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              className="jp-mod-styled jp-PAI-input"
              value={role.name}
              onChange={e => set({ name: e.target.value })}
            />
          )}
        </Field>
        {props.canRemove && (
          <button
            type="button"
            className="jp-mod-styled jp-PAI-icon-button"
            title={`Remove role ${role.name}`}
            aria-label={`Remove role ${role.name}`}
            onClick={props.onRemove}
          >
            <closeIcon.react tag="span" className="jp-PAI-icon" />
          </button>
        )}
      </div>
      <div className="jp-PAI-row">
        <NumberField
          label="Instances"
          path={`${at}.instances`}
          errors={errors}
          value={role.instances}
          min={1}
          parse={text => intValue(text, 1)}
          onChange={instances => set({ instances })}
        />
        <NumberField
          label="GPUs / instance"
          path={`${at}.resourcePerInstance.gpu`}
          errors={errors}
          value={role.gpu}
          min={0}
          max={maxGpu}
          parse={text => countValue(text, maxGpu)}
          onChange={gpu => set({ gpu })}
        />
        <NumberField
          label="CPUs"
          path={`${at}.resourcePerInstance.cpu`}
          errors={errors}
          value={role.cpu}
          min={0}
          step="any"
          parse={text => floatValue(text, 0)}
          onChange={cpu => set({ cpu })}
        />
        <NumberField
          label="Memory (MB)"
          path={`${at}.resourcePerInstance.memoryMB`}
          errors={errors}
          value={role.memoryMB}
          min={0}
          step={1024}
          onChange={memoryMB => set({ memoryMB })}
        />
      </div>
      <Field
        label="Command (one shell line per line)"
        path={`${at}.commands`}
        errors={errors}
      >
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            className="jp-mod-styled jp-PAI-input jp-PAI-code"
            rows={3}
            spellCheck={false}
            placeholder="torchrun --nproc_per_node=$PAI_RESOURCE_GPU train.py"
            value={role.command}
            onChange={e => set({ command: e.target.value })}
          />
        )}
      </Field>
      <div className="jp-PAI-row">
        <Field
          label="Ports"
          path={`${at}.resourcePerInstance.ports`}
          errors={errors}
          className="jp-PAI-grow"
        >
          {(id, d) => (
            <PortsInput
              id={id}
              describedBy={d}
              ports={role.ports}
              onChange={ports => set({ ports })}
            />
          )}
        </Field>
        <NumberField
          label="Task retries"
          path={`${at}.taskRetryCount`}
          errors={errors}
          value={role.taskRetryCount}
          min={0}
          parse={text => countValue(text)}
          onChange={taskRetryCount => set({ taskRetryCount })}
        />
      </div>
    </fieldset>
  );
}

function download(filename: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function LaunchForm(props: ILaunchFormProps): JSX.Element {
  const { model } = props;
  const [form, setForm] = React.useState<JobForm>(() =>
    newJobForm({
      virtualCluster: model.settings.defaultVirtualCluster,
      image: model.settings.defaultImage
    })
  );
  const [formKey, setFormKey] = React.useState(0);
  const [mode, setMode] = React.useState<Mode>('form');
  const [yaml, setYaml] = React.useState('');
  const [yamlErrors, setYamlErrors] = React.useState<LocatedError[]>([]);
  const [yamlFormat, setYamlFormat] = React.useState<JobFormat | null>(null);
  // The server's errors about this exact text (a v1 file it cannot convert):
  // kept until the text is edited, not replaced by the schema's.
  const serverErrorsFor = React.useRef<string | null>(null);
  const [errors, setErrors] = React.useState<FieldError[]>([]);
  const [message, setMessage] = React.useState<string | null>(null);
  const [submitting, setSubmitting] = React.useState(false);
  const [customImage, setCustomImage] = React.useState(false);
  const [validator, setValidator] = React.useState<JobValidator | null>(null);
  const fileInput = React.useRef<HTMLInputElement>(null);
  const yamlArea = React.useRef<HTMLTextAreaElement>(null);
  const attempted = React.useRef(false);

  const vcs = model.virtualClusters;
  const images = model.images;
  const vc = model.virtualCluster(form.virtualCluster);

  React.useEffect(() => {
    void model.validator().then(setValidator);
  }, [model]);

  // Fill in the virtual cluster and image once the server has listed them.
  React.useEffect(() => {
    setForm(f => {
      if (f.image && !catalogueEntry(images, f.image)) {
        setCustomImage(images.length > 0 || !!f.image);
      }
      return withCatalogueDefaults(f, model);
    });
  }, [vcs, images]);

  const load = React.useCallback((next: JobForm, asMode: Mode = 'form') => {
    setForm(next);
    setFormKey(k => k + 1);
    setErrors([]);
    setMessage(null);
    attempted.current = false;
    setCustomImage(!!next.image && !catalogueEntry(model.images, next.image));
    if (asMode === 'yaml') {
      setYaml(specToYaml(formToSpec(next)));
    }
    setMode(asMode);
  }, []);

  // Clone, "new job", storage mounts: requests from other views.
  React.useEffect(() => {
    const onForm = (_: PAIModel, requested: JobForm | null) => {
      // A new form gets the listed VC and image at once, not at the next refresh.
      load(
        requested ??
          withCatalogueDefaults(
            newJobForm({
              virtualCluster: model.settings.defaultVirtualCluster,
              image: model.settings.defaultImage
            }),
            model
          )
      );
    };
    const onMount = (
      _: PAIModel,
      { storage, path }: { storage: string; path: string }
    ) => {
      setForm(f => {
        if (f.storages.some(s => s.name === storage)) {
          return f;
        }
        const mountPath =
          model.storages.find(s => s.name === storage)?.mountPath ?? '';
        return {
          ...f,
          storages: [
            ...f.storages,
            { name: storage, mountPath, readOnly: false }
          ]
        };
      });
      void path;
    };
    model.formRequested.connect(onForm);
    model.mountRequested.connect(onMount);
    return () => {
      model.formRequested.disconnect(onForm);
      model.mountRequested.disconnect(onMount);
    };
  }, [model, load]);

  // Validate the YAML as it is typed (debounced).
  React.useEffect(() => {
    if (mode !== 'yaml') {
      return;
    }
    const timer = setTimeout(() => {
      const result = validateYaml(yaml, validator);
      setYamlFormat(jobFormat(result.job));
      if (serverErrorsFor.current === yaml) {
        return;
      }
      serverErrorsFor.current = null;
      setYamlErrors(result.errors);
    }, 150);
    return () => clearTimeout(timer);
  }, [yaml, mode, validator]);

  // Local checks show once the user has tried to submit, then live.
  const localErrors = attempted.current ? checkForm(form, vc) : [];
  const shown = [...errors, ...localErrors];
  const { byField, unmatched } = assignErrors(shown, formFieldPaths(form));

  const update = (patch: Partial<JobForm>) => {
    setForm(f => ({ ...f, ...patch }));
    // A server error is about what was sent; editing makes it stale.
    if (errors.length) {
      setErrors([]);
    }
  };

  const switchMode = (next: Mode) => {
    if (next === mode) {
      return;
    }
    if (next === 'yaml') {
      setYaml(specToYaml(formToSpec(form)));
      setErrors([]);
      setMode('yaml');
      return;
    }
    const result = validateYaml(yaml, null);
    if (!result.job) {
      setYamlErrors(result.errors);
      setMessage('Fix the YAML before going back to the form.');
      return;
    }
    if (jobFormat(result.job) === 'v1') {
      // The form edits protocol v2: the server converts the v1 job first.
      void convertInto(
        'The YAML',
        result.job,
        yaml,
        'Opened the YAML in the form'
      );
      return;
    }
    load(specToForm(result.job));
  };

  const convert = (text: string) => model.client.convertJob(text);

  const notifyImported = (name: string, imported: ImportedJob, lead?: string) =>
    emitNotice(importNotice(name, imported, lead));

  /** Show the server's errors about `text` at their lines in the YAML editor. */
  const showServerErrors = (
    text: string,
    errors: FieldError[],
    why: string
  ) => {
    serverErrorsFor.current = text;
    setYaml(text);
    setYamlErrors(locateErrors(text, errors));
    setMode('yaml');
    setMessage(why);
  };

  const convertInto = async (
    name: string,
    doc: Record<string, unknown>,
    text: string,
    lead: string
  ) => {
    try {
      const imported = await importJob(name, doc, text, convert);
      load(imported.form);
      notifyImported(name, imported, lead);
    } catch (error) {
      if (error instanceof JobFileError && error.errors.length) {
        showServerErrors(
          text,
          error.errors,
          `${error.headline}: see the fields listed below.`
        );
      } else {
        setMessage(describeError(error));
      }
    }
  };

  const importFile = async (file: File) => {
    const text = await file.text();
    try {
      const imported = await importJobFile(file.name, text, convert);
      load(imported.form);
      notifyImported(file.name, imported);
      return;
    } catch (error) {
      if (error instanceof JobFileError && error.errors.length) {
        // A v1 job with fields that cannot be converted: each at its line.
        showServerErrors(
          text,
          error.errors,
          `${error.headline}: see the fields listed below.`
        );
        return;
      }
      if (!(error instanceof JobFileError)) {
        // The converter could not be asked: say so, with the file to edit.
        setYaml(text);
        setMode('yaml');
        setMessage(`${file.name} opened as YAML: ${describeError(error)}`);
        return;
      }
    }
    // Not readable as a job: show it in the YAML editor with its errors.
    setYaml(text);
    setMode('yaml');
    setMessage(
      `${file.name} opened as YAML: see the problems listed below it.`
    );
  };

  const exportFile = () => {
    const text = mode === 'yaml' ? yaml : specToYaml(formToSpec(form));
    let name = form.name || 'job';
    if (mode === 'yaml') {
      try {
        const spec = yamlToSpec(yaml);
        name = spec.name || spec.jobName || name;
      } catch {
        // keep the form's name
      }
    }
    download(`${name}.yaml`, text, 'text/yaml');
  };

  const submit = async (event?: React.FormEvent) => {
    event?.preventDefault();
    if (submitting) {
      return;
    }
    setMessage(null);
    setErrors([]);
    let body: string | Record<string, any>;
    if (mode === 'form') {
      attempted.current = true;
      const problems = checkForm(form, vc);
      if (problems.length) {
        setMessage(
          `${problems.length} field${problems.length > 1 ? 's need' : ' needs'} attention.`
        );
        focusFirstError();
        return;
      }
      body = formToSpec(form);
    } else {
      const result = validateYaml(yaml, validator);
      setYamlErrors(result.errors);
      if (!result.job || result.errors.length) {
        setMessage(
          'The YAML has problems (listed below); the job was not submitted.'
        );
        return;
      }
      body = yaml;
    }
    setSubmitting(true);
    try {
      const { job, warnings } = await model.client.submitJob(body);
      attempted.current = false;
      Notification.success(
        `Submitted ${job.name} to ${job.virtualCluster}` +
          (job.state === 'WAITING' && job.waitingReason
            ? `: ${job.waitingReason}`
            : ''),
        { autoClose: 5000 }
      );
      if (warnings.length) {
        Notification.warning(
          `${job.name}: ${warnings.map(w => (w.path ? `${w.path}: ${w.message}` : w.message)).join('; ')}`,
          { autoClose: 10000 }
        );
      }
      // A new name for the next job, so "submit again" does not collide.
      update({
        name: `${form.name.replace(/-\d+$/, '')}-${Date.now() % 100000}`
      });
      void model.refreshNow();
      props.onSubmitted?.(job);
    } catch (error) {
      if (error instanceof PAIRequestError) {
        let fieldErrors = error.errors;
        if (!fieldErrors.length && error.status === 409) {
          fieldErrors = [{ path: 'name', message: error.message }];
        }
        if (mode === 'yaml') {
          setYamlErrors(locateErrors(yaml, fieldErrors));
        } else {
          setErrors(fieldErrors);
          focusFirstError();
        }
        setMessage(error.describe());
      } else {
        setMessage(describeError(error));
      }
    } finally {
      setSubmitting(false);
    }
  };

  // Focus the first invalid field once the errors are rendered (an effect runs
  // after the commit; a timer or animation frame may run before it).
  const focusPending = React.useRef(false);
  const focusFirstError = () => {
    focusPending.current = true;
  };
  React.useEffect(() => {
    if (!focusPending.current) {
      return;
    }
    focusPending.current = false;
    document
      .querySelector<HTMLElement>(
        '.jp-PAI-launch .jp-mod-invalid input, .jp-PAI-launch .jp-mod-invalid textarea, .jp-PAI-launch .jp-mod-invalid select'
      )
      ?.focus();
  });

  const goToLine = (line: number | undefined) => {
    const area = yamlArea.current;
    if (!area || !line) {
      return;
    }
    const lines = area.value.split('\n');
    const start = lines
      .slice(0, line - 1)
      .reduce((n, l) => n + l.length + 1, 0);
    area.focus();
    area.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
    const lineHeight = area.scrollHeight / Math.max(lines.length, 1);
    area.scrollTop = Math.max(0, (line - 3) * lineHeight);
  };

  const gpus = totalGpus(form);
  const waitHint =
    vc && form.gang && gpus > vc.free.gpu && gpus <= vc.capacity.gpu
      ? `Needs ${gpus} GPU${gpus === 1 ? '' : 's'} at once; ${vc.free.gpu} free now — the job will wait in ${vc.name}'s queue.`
      : null;
  const entry = catalogueEntry(images, form.image);

  return (
    <form className="jp-PAI-launch" onSubmit={submit} noValidate>
      <div className="jp-PAI-toolbar" role="toolbar" aria-label="Launch form">
        <div className="jp-PAI-segmented" role="group" aria-label="Editor">
          <button
            type="button"
            className={`jp-mod-styled ${mode === 'form' ? 'jp-mod-active' : ''}`}
            aria-pressed={mode === 'form'}
            onClick={() => switchMode('form')}
          >
            Form
          </button>
          <button
            type="button"
            className={`jp-mod-styled ${mode === 'yaml' ? 'jp-mod-active' : ''}`}
            aria-pressed={mode === 'yaml'}
            onClick={() => switchMode('yaml')}
          >
            Edit as YAML
          </button>
        </div>
        <span className="jp-PAI-spacer" />
        <button
          type="button"
          className="jp-mod-styled jp-PAI-link-button"
          onClick={() => fileInput.current?.click()}
          title="Import an OpenPAI job file (YAML or JSON)"
        >
          Import
        </button>
        <button
          type="button"
          className="jp-mod-styled jp-PAI-link-button"
          onClick={exportFile}
          title="Download the job as protocol v2 YAML"
        >
          Export
        </button>
        <button
          type="button"
          className="jp-mod-styled jp-PAI-link-button"
          onClick={() => model.requestForm(null)}
          title="Start over with a new job"
        >
          New
        </button>
        <input
          ref={fileInput}
          type="file"
          accept=".yaml,.yml,.json,application/yaml,application/json,text/yaml"
          hidden
          onChange={e => {
            const file = e.target.files?.[0];
            if (file) {
              void importFile(file);
            }
            e.target.value = '';
          }}
        />
      </div>

      {message && (
        <div className="jp-PAI-error" role="alert">
          {message}
          {unmatched.length > 0 && (
            <ul>
              {unmatched.map((e, i) => (
                <li key={i}>
                  {e.path ? <code>{e.path}</code> : null}
                  {e.path ? ': ' : ''}
                  {e.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}

      {mode === 'yaml' ? (
        <div className="jp-PAI-yaml">
          <label htmlFor="jp-PAI-yaml-text" className="jp-PAI-sr-only">
            Job as protocol v2 YAML
          </label>
          <textarea
            id="jp-PAI-yaml-text"
            ref={yamlArea}
            className="jp-mod-styled jp-PAI-input jp-PAI-code jp-PAI-yaml-text"
            spellCheck={false}
            value={yaml}
            aria-invalid={yamlErrors.length > 0}
            aria-describedby="jp-PAI-yaml-errors"
            onChange={e => setYaml(e.target.value)}
          />
          <div id="jp-PAI-yaml-errors" aria-live="polite">
            {yamlErrors.length === 0 ? (
              <div className="jp-PAI-ok">
                {!validator
                  ? 'YAML is well formed.'
                  : yamlFormat === 'v1'
                    ? 'Valid OpenPAI v1 job: converted to protocol v2 when submitted.'
                    : yamlFormat === 'short'
                      ? 'Valid short-form job.'
                      : 'Valid protocol v2 job.'}
              </div>
            ) : (
              <ul className="jp-PAI-field-errors jp-PAI-yaml-errors">
                {yamlErrors.map((e, i) => (
                  <li key={i}>
                    <button
                      type="button"
                      className="jp-PAI-link-button"
                      onClick={() => goToLine(e.line)}
                      disabled={!e.line}
                    >
                      {e.line ? `line ${e.line}` : 'job'}
                    </button>{' '}
                    {e.path ? <code>{displayPath(e.path)}</code> : null}
                    {e.path ? ': ' : ''}
                    {e.message}
                  </li>
                ))}
              </ul>
            )}
          </div>
        </div>
      ) : (
        <div className="jp-PAI-form-fields" key={formKey}>
          <Field label="Job name" path="name" errors={byField}>
            {(id, d) => (
              <input
                id={id}
                aria-describedby={d}
                className="jp-mod-styled jp-PAI-input"
                value={form.name}
                onChange={e => update({ name: e.target.value })}
              />
            )}
          </Field>

          <Field
            label="Virtual cluster"
            path="defaults.virtualCluster"
            errors={byField}
            hint={
              vc
                ? `${vc.used.gpu} used, ${vc.free.gpu} free of ${vc.capacity.gpu} GPUs; ${vc.runningJobs} running, ${vc.queuedJobs} waiting`
                : vcs.length
                  ? null
                  : (model.error ?? 'Loading virtual clusters…')
            }
          >
            {(id, d) => (
              <select
                id={id}
                aria-describedby={d}
                className="jp-mod-styled jp-PAI-input"
                value={form.virtualCluster}
                onChange={e => update({ virtualCluster: e.target.value })}
              >
                {!vc && (
                  <option value={form.virtualCluster}>
                    {form.virtualCluster || '(default)'}
                  </option>
                )}
                {vcs.map(v => (
                  <option key={v.name} value={v.name}>
                    {vcLabel(v)}
                  </option>
                ))}
              </select>
            )}
          </Field>

          <Field
            label="Image"
            path="prerequisites"
            errors={byField}
            hint={
              entry?.description ??
              (customImage ? 'Any image your cluster can pull.' : null)
            }
          >
            {(id, d) => (
              <div className="jp-PAI-row">
                <select
                  id={id}
                  aria-describedby={d}
                  className="jp-mod-styled jp-PAI-input jp-PAI-grow"
                  value={customImage || !entry ? '__custom__' : entry.uri}
                  onChange={e => {
                    if (e.target.value === '__custom__') {
                      setCustomImage(true);
                    } else {
                      setCustomImage(false);
                      update({ image: e.target.value });
                    }
                  }}
                >
                  {images.map(i => (
                    <option key={i.name} value={i.uri}>
                      {i.name}
                      {i.gpu ? '' : ' (CPU)'}
                    </option>
                  ))}
                  <option value="__custom__">Custom image URI…</option>
                </select>
              </div>
            )}
          </Field>
          {(customImage || !entry) && (
            <div className="jp-PAI-field">
              <label htmlFor="jp-PAI-image-uri">Image URI</label>
              <input
                id="jp-PAI-image-uri"
                className="jp-mod-styled jp-PAI-input"
                placeholder="registry.example.com/team/pytorch:2.3-cuda12"
                value={form.image}
                onChange={e => update({ image: e.target.value })}
              />
            </div>
          )}

          <div className="jp-PAI-section-title">
            Task roles
            <span className="jp-PAI-muted">
              {' '}
              · {gpus} GPU{gpus === 1 ? '' : 's'} in all
            </span>
          </div>
          <SectionErrors errors={byField} path="taskRoles" />
          {form.roles.map((role, i) => (
            <RoleEditor
              key={i}
              role={role}
              index={i}
              vc={vc}
              errors={byField}
              canRemove={form.roles.length > 1}
              onChange={next => {
                const roles = [...form.roles];
                roles[i] = next;
                update({ roles });
              }}
              onRemove={() =>
                update({ roles: form.roles.filter((_, j) => j !== i) })
              }
            />
          ))}
          <button
            type="button"
            className="jp-mod-styled jp-PAI-link-button"
            onClick={() =>
              update({
                roles: [
                  ...form.roles,
                  newRole(
                    uniqueRoleName(form, 'worker'),
                    form.roles[0]?.gpu ?? 0
                  )
                ]
              })
            }
          >
            + Add task role
          </button>
          {waitHint && <div className="jp-PAI-warning">{waitHint}</div>}

          <div className="jp-PAI-section-title">Parameters</div>
          <div className="jp-PAI-hint">
            Used in commands as <code>{'<% $parameters.name %>'}</code>.
          </div>
          <SectionErrors errors={byField} path="parameters" />
          {form.parameters.map((p, i) => (
            <div className="jp-PAI-row" key={i}>
              <input
                aria-label={`parameter ${i + 1} name`}
                className="jp-mod-styled jp-PAI-input"
                placeholder="name"
                value={p.key}
                onChange={e => {
                  const parameters = [...form.parameters];
                  parameters[i] = { ...p, key: e.target.value };
                  update({ parameters });
                }}
              />
              <input
                aria-label={`parameter ${i + 1} value`}
                className="jp-mod-styled jp-PAI-input jp-PAI-grow"
                placeholder="value"
                value={p.value}
                onChange={e => {
                  const parameters = [...form.parameters];
                  parameters[i] = { ...p, value: e.target.value };
                  update({ parameters });
                }}
              />
              <button
                type="button"
                className="jp-mod-styled jp-PAI-icon-button"
                aria-label={`Remove parameter ${p.key}`}
                onClick={() =>
                  update({
                    parameters: form.parameters.filter((_, j) => j !== i)
                  })
                }
              >
                <closeIcon.react tag="span" className="jp-PAI-icon" />
              </button>
            </div>
          ))}
          <button
            type="button"
            className="jp-mod-styled jp-PAI-link-button"
            onClick={() =>
              update({
                parameters: [...form.parameters, { key: '', value: '' }]
              })
            }
          >
            + Add parameter
          </button>

          <div className="jp-PAI-section-title">Storages</div>
          <SectionErrors errors={byField} path="extras.storages" />
          {form.storages.map((s, i) => (
            <StorageMountRow
              key={i}
              index={i}
              mount={s}
              model={model}
              errors={byField}
              onChange={next => {
                const storages = [...form.storages];
                storages[i] = next;
                update({ storages });
              }}
              onRemove={() =>
                update({ storages: form.storages.filter((_, j) => j !== i) })
              }
            />
          ))}
          {model.storages.length === 0 ? (
            <div className="jp-PAI-hint">No storage is configured for you.</div>
          ) : (
            <button
              type="button"
              className="jp-mod-styled jp-PAI-link-button"
              onClick={() => {
                const free = model.storages.find(
                  s => !form.storages.some(m => m.name === s.name)
                );
                const pick = free ?? model.storages[0];
                update({
                  storages: [
                    ...form.storages,
                    {
                      name: pick.name,
                      mountPath: pick.mountPath,
                      readOnly: pick.readOnly
                    }
                  ]
                });
              }}
            >
              + Mount a storage
            </button>
          )}

          <div className="jp-PAI-section-title">Scheduling</div>
          <div className="jp-PAI-field" data-path="extras.gangAllocation">
            <label className="jp-PAI-check jp-PAI-wrap">
              <input
                type="checkbox"
                checked={form.gang}
                onChange={e => update({ gang: e.target.checked })}
              />{' '}
              Gang scheduling: start all instances together or none
            </label>
            <SectionErrors errors={byField} path="extras.gangAllocation" />
          </div>
          <NumberField
            label="Job retries"
            path="jobRetryCount"
            errors={byField}
            value={form.jobRetryCount}
            min={0}
            parse={text => countValue(text)}
            onChange={jobRetryCount => update({ jobRetryCount })}
          />
        </div>
      )}

      <div className="jp-PAI-submit-row">
        <button
          type="submit"
          className="jp-mod-styled jp-mod-accept jp-PAI-submit"
          disabled={submitting}
        >
          {submitting ? 'Submitting…' : 'Submit job'}
        </button>
      </div>
    </form>
  );
}

function StorageMountRow(props: {
  index: number;
  mount: MountForm;
  model: PAIModel;
  errors: Map<string, FieldError[]>;
  onChange: (mount: MountForm) => void;
  onRemove: () => void;
}): JSX.Element {
  const { mount, model, index, errors } = props;
  const at = `extras.storages.${index}`;
  const known = model.storages.find(s => s.name === mount.name);
  const fieldErrors = [
    ...(errors.get(at) ?? []),
    ...(errors.get(`${at}.name`) ?? []),
    ...(errors.get(`${at}.mountPath`) ?? [])
  ];
  return (
    <div
      className={`jp-PAI-mount ${fieldErrors.length ? 'jp-mod-invalid' : ''}`}
      data-path={at}
    >
      <div className="jp-PAI-row">
        <select
          aria-label={`storage ${index + 1}`}
          className="jp-mod-styled jp-PAI-input"
          value={mount.name}
          onChange={e => {
            const s = model.storages.find(x => x.name === e.target.value);
            props.onChange({
              ...mount,
              name: e.target.value,
              mountPath: s?.mountPath ?? mount.mountPath,
              readOnly: s?.readOnly ?? mount.readOnly
            });
          }}
        >
          {!known && <option value={mount.name}>{mount.name}</option>}
          {model.storages.map(s => (
            <option key={s.name} value={s.name}>
              {s.name}
            </option>
          ))}
        </select>
        <input
          aria-label={`mount path of storage ${index + 1}`}
          className="jp-mod-styled jp-PAI-input jp-PAI-grow"
          placeholder={`/mnt/${mount.name}`}
          value={mount.mountPath}
          onChange={e =>
            props.onChange({ ...mount, mountPath: e.target.value })
          }
        />
        <label className="jp-PAI-check" title="Mount read-only">
          <input
            type="checkbox"
            checked={mount.readOnly}
            disabled={known?.readOnly}
            onChange={e =>
              props.onChange({ ...mount, readOnly: e.target.checked })
            }
          />
          RO
        </label>
        <button
          type="button"
          className="jp-mod-styled jp-PAI-icon-button"
          aria-label={`Remove storage ${mount.name}`}
          onClick={props.onRemove}
        >
          <closeIcon.react tag="span" className="jp-PAI-icon" />
        </button>
      </div>
      {fieldErrors.length > 0 && (
        <ul className="jp-PAI-field-errors" role="alert">
          {fieldErrors.map((e, i) => (
            <li key={i}>{e.message}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
