/**
 * Job files into the launch form, for the Import button and the file
 * browser's "Open in PAI Launch Form" alike. Protocol-v2 jobs load as they
 * are; OpenPAI v1 JSON jobs go through the server's converter (`POST
 * convert`), the one conversion both the panel and `POST jobs` use.
 */

import { PAIRequestError } from './apirequest';
import { isOpenPAIv1 } from './detectjobformat';
import type { ConvertResult, FieldError, JobFormat } from './restmodels';
import { specToForm, yamlToSpec, type JobForm } from './jobform';

/** File names the launch form can open: OpenPAI job files are YAML or JSON. */
export const JOB_FILE = /\.(ya?ml|json)$/i;

/** The server's converter (`PAIClient.convertJob`): job text → protocol v2. */
export type JobConverter = (text: string) => Promise<ConvertResult>;

/** A job file in the form, and what the user should be told about it. */
export interface ImportedJob {
  form: JobForm;
  /** The form the file was written in. */
  format: JobFormat;
  /** The converter's warnings ("converted from an OpenPAI v1 job", …). */
  warnings: FieldError[];
}

/**
 * Why a file cannot be opened in the form. `errors` name the fields as the
 * file writes them (`taskRoles[0].portList[0].beginAt`), when the converter said;
 * `headline` is the sentence before them, and `message` has both.
 */
export class JobFileError extends Error {
  constructor(
    readonly headline: string,
    readonly errors: FieldError[] = []
  ) {
    super(
      errors.length ? `${headline}: ${describeFieldErrors(errors)}` : headline
    );
    this.name = 'JobFileError';
    Object.setPrototypeOf(this, JobFileError.prototype);
  }
}

/**
 * What a notification says (JupyterLab cuts it at 140 characters), and the
 * whole list of fields behind it for a "Details" dialog.
 */
export interface Notice {
  type: 'info' | 'warning' | 'error';
  message: string;
  autoClose: number | false;
  /** Every field error or warning, in full; empty when the message says all. */
  details: FieldError[];
  /** The title of the details dialog. */
  title: string;
}

/** `authFile, taskRoles[0].portList[0].beginAt`: which fields, not yet what about them. */
function fieldNames(errors: FieldError[]): string {
  return [...new Set(errors.map(e => displayPath(e.path) || 'the job'))].join(
    ', '
  );
}

/** `taskRoles.0.portList.0.beginAt` → `taskRoles[0].portList[0].beginAt`, as JSON reads. */
export function displayPath(path: string): string {
  return path.replace(/\.(\d+)(?=\.|$)/g, '[$1]');
}

/** Field errors or warnings in words: `path: message; path: message`. */
export function describeFieldErrors(errors: FieldError[]): string {
  return errors
    .map(e => (e.path ? `${displayPath(e.path)}: ${e.message}` : e.message))
    .join('; ');
}

/** A job file's text as a mapping; JSON files are read as JSON. */
export function parseJobFile(
  path: string,
  text: string
): Record<string, unknown> {
  const isJson = /\.json$/i.test(path);
  try {
    return isJson ? parseJsonObject(text) : yamlToSpec(text);
  } catch (error) {
    throw new JobFileError(
      `${path} is not valid ${isJson ? 'JSON' : 'YAML'}: ${(error as Error).message}`
    );
  }
}

function parseJsonObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error('a job is a JSON object (jobName, taskRoles…)');
  }
  return value as Record<string, unknown>;
}

/**
 * A parsed job as a launch form. `text` is what the user wrote, sent to the
 * converter as is for a v1 job so its errors point into it.
 *
 * @throws JobFileError for a job the form cannot open, with the converter's
 *   field errors for a v1 job it refused; PAIRequestError when the server
 *   could not be asked.
 */
export async function importJob(
  name: string,
  doc: Record<string, unknown>,
  text: string,
  convert: JobConverter
): Promise<ImportedJob> {
  if (isOpenPAIv1(doc)) {
    let result: ConvertResult;
    try {
      result = await convert(text);
    } catch (error) {
      if (error instanceof PAIRequestError && error.status === 400) {
        const errors = error.errors.length
          ? error.errors
          : [{ path: '', message: error.message }];
        throw new JobFileError(
          `${name} cannot be converted from OpenPAI v1`,
          errors
        );
      }
      throw error;
    }
    return {
      form: specToForm(result.job),
      format: 'v1',
      warnings: result.warnings ?? []
    };
  }
  const roles = doc.taskRoles;
  if (!roles || typeof roles !== 'object' || Array.isArray(roles)) {
    throw new JobFileError(
      `${name} has no taskRoles: the form opens OpenPAI protocol-v2 and v1 jobs`
    );
  }
  return { form: specToForm(doc), format: 'v2', warnings: [] };
}

/** A job file's text as a launch form (see `importJob`). */
export async function importJobFile(
  path: string,
  text: string,
  convert: JobConverter
): Promise<ImportedJob> {
  return importJob(path, parseJobFile(path, text), text, convert);
}

const CONVERTED = /OpenPAI v1/;

/**
 * What to tell the user once a file is in the form: that a v1 job was
 * converted, and which fields any other warning is about (a warning then,
 * kept until read, with the warnings in full behind "Details"). `lead`
 * starts the sentence ("Imported train.json").
 */
export function importNotice(
  name: string,
  imported: ImportedJob,
  lead = `Imported ${name}`
): Notice {
  const notes = imported.warnings.filter(
    w => !(imported.format === 'v1' && !w.path && CONVERTED.test(w.message))
  );
  let message = lead;
  if (imported.format === 'v1') {
    message += ': converted from OpenPAI v1 to protocol v2';
  }
  if (notes.length) {
    message += `${imported.format === 'v1' ? ',' : ':'} with warnings about ${fieldNames(notes)}`;
  }
  return {
    type: notes.length ? 'warning' : 'info',
    message,
    autoClose: notes.length ? false : imported.format === 'v1' ? 8000 : 3000,
    details: notes,
    title: `Warnings about ${name}`
  };
}

/** A file the form cannot open: which fields, with every message behind "Details". */
export function importErrorNotice(error: JobFileError): Notice {
  return {
    type: 'error',
    message: error.errors.length
      ? `${error.headline}: ${fieldNames(error.errors)}`
      : error.headline,
    autoClose: false,
    details: error.errors,
    title: error.headline
  };
}
