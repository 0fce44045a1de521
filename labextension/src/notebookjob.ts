/**
 * "Run as PAI Job" on a notebook in the file browser: a small dialog (GPUs,
 * virtual cluster, parameters), `POST notebook-jobs`, and the executed
 * notebook opened when the job ends.
 */

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { describeError, type PAIModel } from './panelstate';
import {
  isTerminal,
  type JobDetail,
  type NotebookJobRequest
} from './restmodels';

/** `k=v` lines (blank lines and `#` comments skipped) → parameters. */
export function parseParams(text: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) {
      continue;
    }
    const at = line.indexOf('=');
    if (at <= 0) {
      throw new Error(`"${line}" is not name=value`);
    }
    params[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return params;
}

/** The dialog's body: GPUs, virtual cluster and parameters. */
class RunNotebookForm extends Widget {
  constructor(vcs: string[]) {
    super({ node: document.createElement('form') });
    this.addClass('jp-PAI-run-notebook');
    const gpus = labelled('GPUs', document.createElement('input'));
    gpus.field.type = 'number';
    gpus.field.min = '0';
    gpus.field.value = '0';
    gpus.field.name = 'gpus';
    const vc = labelled('Virtual cluster', document.createElement('select'));
    vc.field.name = 'vc';
    for (const name of vcs) {
      const option = document.createElement('option');
      option.value = option.textContent = name;
      vc.field.appendChild(option);
    }
    const params = labelled(
      'Parameters (name=value per line)',
      document.createElement('textarea')
    );
    params.field.name = 'params';
    params.field.rows = 3;
    params.field.placeholder = 'alpha=0.5';
    this.node.append(gpus.label, vc.label, params.label);
    this._gpus = gpus.field;
    this._vc = vc.field;
    this._params = params.field;
  }

  getValue(): Omit<NotebookJobRequest, 'path'> {
    return {
      gpus: Number(this._gpus.value || 0),
      vc: this._vc.value || null,
      params: parseParams(this._params.value)
    };
  }

  private _gpus: HTMLInputElement;
  private _vc: HTMLSelectElement;
  private _params: HTMLTextAreaElement;
}

function labelled<T extends HTMLElement>(
  text: string,
  field: T
): { label: HTMLLabelElement; field: T } {
  const label = document.createElement('label');
  label.textContent = text;
  label.appendChild(field);
  return { label, field };
}

/**
 * Ask for the job's GPUs, VC and parameters, submit, and open the executed
 * notebook once the job has ended (a failed notebook too: it shows the error).
 */
export async function runNotebook(
  model: PAIModel,
  path: string,
  open: (path: string) => void,
  openJob: (id: string, name: string) => void,
  pollMs = 1000
): Promise<void> {
  const form = new RunNotebookForm(model.virtualClusters.map(vc => vc.name));
  let answer: Dialog.IResult<Omit<NotebookJobRequest, 'path'>>;
  try {
    answer = await showDialog({
      title: `Run ${path} as a PAI job`,
      body: form,
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Run' })]
    });
  } catch (error) {
    // The parameters did not read as name=value lines.
    Notification.error(`Could not run ${path}: ${describeError(error)}`, {
      autoClose: false
    });
    return;
  }
  if (!answer.button.accept || !answer.value) {
    return;
  }
  let job: JobDetail;
  let output: string | null | undefined;
  try {
    const result = await model.client.submitNotebook({
      path,
      ...answer.value
    });
    ({ job, output } = result);
  } catch (error) {
    Notification.error(`Could not run ${path}: ${describeError(error)}`, {
      autoClose: false
    });
    return;
  }
  void model.refreshNow();
  Notification.info(
    `Running ${path} as ${job.name}` +
      (output ? `; ${output} opens when it ends` : ''),
    {
      autoClose: 5000,
      actions: [
        { label: 'Show job', callback: () => openJob(job.id, job.name) }
      ]
    }
  );
  while (!isTerminal(job.state)) {
    await new Promise(resolve => setTimeout(resolve, pollMs));
    try {
      job = await model.client.job(job.id);
    } catch {
      // A missed poll (server busy): try again on the next one.
    }
  }
  const how = job.state === 'SUCCEEDED' ? 'success' : 'error';
  Notification[how](`${job.name} ${job.state}: ${path}`, { autoClose: 8000 });
  if (output) {
    open(output);
  }
}
