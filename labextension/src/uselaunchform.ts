/**
 * The launch form's state and its transitions: the form or its YAML, the
 * errors shown and where, importing, exporting and submitting. The views
 * (`launchform.tsx` and the editors it holds) only render it.
 */

import { Notification } from '@jupyterlab/apputils';
import * as React from 'react';

import { PAIRequestError } from './apirequest';
import { jobFormat } from './detectjobformat';
import { emitNotice } from './fielderrorlist';
import { settingsForm, withCatalogueDefaults } from './formdefaults';
import { assignErrors, checkForm, formFieldPaths } from './formchecks';
import { gpuTypeFieldPaths } from './gputypes';
import { isListedImage } from './imagecatalogue';
import {
  importJob,
  importJobFile,
  importNotice,
  JobFileError,
  type ImportedJob
} from './jobfile';
import {
  formToSpec,
  newRole,
  specToForm,
  specToYaml,
  uniqueRoleName,
  yamlToSpec,
  type JobForm
} from './jobform';
import { describeError, PAIModel } from './panelstate';
import type {
  FieldError,
  JobDetail,
  JobFormat,
  VirtualCluster
} from './restmodels';
import { useYamlText } from './useyamltext';
import {
  locateErrors,
  validateYaml,
  type JobValidator,
  type LocatedError
} from './validate';

export type EditorMode = 'form' | 'yaml';

export interface ILaunchForm {
  form: JobForm;
  /** Changes when another job is loaded, so the fields start afresh. */
  formKey: number;
  mode: EditorMode;
  yaml: string;
  yamlErrors: LocatedError[];
  /** The form the YAML is written in, once it is valid. */
  yamlFormat: JobFormat | null;
  /** The schema validator; null until the server sent the schema. */
  validator: JobValidator | null;
  message: string | null;
  submitting: boolean;
  /** The image is a URI typed in, not a catalogue entry. */
  customImage: boolean;
  /** The form's virtual cluster, where the server lists it. */
  vc: VirtualCluster | undefined;
  /** The errors shown at a field, by the field's path. */
  byField: Map<string, FieldError[]>;
  /** The errors no field shows: listed under the message. */
  unmatched: FieldError[];
  update: (patch: Partial<JobForm>) => void;
  setYaml: (text: string) => void;
  /** A catalogue image by URI, or null for one typed in. */
  pickImage: (uri: string | null) => void;
  addRole: () => void;
  switchMode: (mode: EditorMode) => void;
  importFile: (file: File) => Promise<void>;
  exportFile: () => void;
  submit: (event?: React.FormEvent) => Promise<void>;
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

export function useLaunchForm(
  model: PAIModel,
  onSubmitted?: (job: JobDetail) => void
): ILaunchForm {
  const [form, setForm] = React.useState<JobForm>(() => settingsForm(model));
  const [formKey, setFormKey] = React.useState(0);
  const [mode, setMode] = React.useState<EditorMode>('form');
  const [errors, setErrors] = React.useState<FieldError[]>([]);
  const [message, setMessage] = React.useState<string | null>(null);
  const [submitting, setSubmitting] = React.useState(false);
  const [customImage, setCustomImage] = React.useState(false);
  const [validator, setValidator] = React.useState<JobValidator | null>(null);
  const attempted = React.useRef(false);
  const yamlText = useYamlText(validator, mode === 'yaml');
  const { yaml, setYaml } = yamlText;

  const vcs = model.virtualClusters;
  const images = model.images;
  const vc = model.virtualCluster(form.virtualCluster);

  React.useEffect(() => {
    void model.validator().then(setValidator);
  }, [model]);

  // Fill in the virtual cluster and image once the server has listed them.
  React.useEffect(() => {
    setForm(f => {
      if (f.image && !isListedImage(model.imageChoices, f.image)) {
        setCustomImage(images.length > 0 || !!f.image);
      }
      return withCatalogueDefaults(f, model);
    });
  }, [vcs, images]);

  const load = React.useCallback(
    (next: JobForm, asMode: EditorMode = 'form') => {
      setForm(next);
      setFormKey(k => k + 1);
      setErrors([]);
      setMessage(null);
      attempted.current = false;
      setCustomImage(
        !!next.image && !isListedImage(model.imageChoices, next.image)
      );
      if (asMode === 'yaml') {
        setYaml(specToYaml(formToSpec(next)));
      }
      setMode(asMode);
    },
    []
  );

  // Clone, "new job", storage mounts: requests from other views.
  React.useEffect(() => {
    const onForm = (_: PAIModel, requested: JobForm | null) => {
      // A new form gets the listed VC and image at once, not at the next refresh.
      load(requested ?? withCatalogueDefaults(settingsForm(model), model));
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

  // Local checks show once the user has tried to submit, then live.
  const localErrors = attempted.current ? checkForm(form, vc) : [];
  const shown = [...errors, ...localErrors];
  const { byField, unmatched } = assignErrors(shown, [
    ...formFieldPaths(form),
    ...gpuTypeFieldPaths(form.roles, vc)
  ]);

  const update = (patch: Partial<JobForm>) => {
    setForm(f => ({ ...f, ...patch }));
    // A server error is about what was sent; editing makes it stale.
    if (errors.length) {
      setErrors([]);
    }
  };

  const pickImage = (uri: string | null) => {
    setCustomImage(uri === null);
    if (uri !== null) {
      update({ image: uri });
    }
  };

  const addRole = () =>
    update({
      roles: [
        ...form.roles,
        newRole(uniqueRoleName(form, 'worker'), form.roles[0]?.gpu ?? 0)
      ]
    });

  const switchMode = (next: EditorMode) => {
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
      yamlText.setErrors(result.errors);
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

  /** Show `text` in the YAML editor, with `why` above it. */
  const showYaml = (text: string, why: string) => {
    setYaml(text);
    setMode('yaml');
    setMessage(why);
  };

  /** Show the server's errors about `text` at their lines in the YAML editor. */
  const showServerErrors = (text: string, error: JobFileError) => {
    yamlText.showServerErrors(text, error.errors);
    showYaml(text, `${error.headline}: see the fields listed below.`);
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
        showServerErrors(text, error);
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
        showServerErrors(text, error);
        return;
      }
      if (!(error instanceof JobFileError)) {
        // The converter could not be asked: say so, with the file to edit.
        showYaml(text, `${file.name} opened as YAML: ${describeError(error)}`);
        return;
      }
    }
    // Not readable as a job: show it in the YAML editor with its errors.
    showYaml(
      text,
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
      yamlText.setErrors(result.errors);
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
      onSubmitted?.(job);
    } catch (error) {
      if (error instanceof PAIRequestError) {
        let fieldErrors = error.errors;
        if (!fieldErrors.length && error.status === 409) {
          fieldErrors = [{ path: 'name', message: error.message }];
        }
        if (mode === 'yaml') {
          yamlText.setErrors(locateErrors(yaml, fieldErrors));
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

  return {
    form,
    formKey,
    mode,
    yaml,
    yamlErrors: yamlText.errors,
    yamlFormat: yamlText.format,
    validator,
    message,
    submitting,
    customImage,
    vc,
    byField,
    unmatched,
    update,
    setYaml,
    pickImage,
    addRole,
    switchMode,
    importFile,
    exportFile,
    submit
  };
}
