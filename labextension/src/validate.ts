/**
 * Validating a job as it is typed, against the JSON Schema the server
 * publishes (`GET schema`), so the YAML editor and the server agree.
 */

import Ajv2020, {
  type ErrorObject,
  type ValidateFunction
} from 'ajv/dist/2020';
import { LineCounter, parseDocument, isNode } from 'yaml';

import { jobFormat } from './detectjobformat';
import type { FieldError } from './restmodels';

/** A field error located in the YAML text (1-based line), when it can be. */
export interface LocatedError extends FieldError {
  line?: number;
}

const DEFAULT_ID = 'jupyter-pai-job-schema';

/** Dotted path from a JSON pointer: `/taskRoles/worker/instances` → `taskRoles.worker.instances`. */
export function pointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map(part => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/** The path of a field named in an error about its parent object. */
function childPath(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function describe(error: ErrorObject): { path: string; message: string } {
  const path = pointerToPath(error.instancePath);
  const params: any = error.params;
  const badName: string | undefined =
    (error as any).propertyName ?? params.propertyName;
  if (badName !== undefined) {
    return {
      path,
      message: `name ${JSON.stringify(badName)} must start with a letter or _ and hold only letters, digits and _`
    };
  }
  switch (error.keyword) {
    case 'required':
      return {
        path: childPath(path, params.missingProperty),
        message: 'is required'
      };
    case 'pattern':
      if (path === 'name' || path.endsWith('.name')) {
        return { path, message: 'use only letters, digits, - and _' };
      }
      return { path, message: `must match ${params.pattern}` };
    case 'enum':
      return {
        path,
        message: `must be one of ${(params.allowedValues ?? []).map((v: any) => JSON.stringify(v)).join(', ')}`
      };
    case 'const':
      // The schema says why for v1 fields that cannot be converted (authFile…).
      return {
        path,
        message:
          typeof error.parentSchema?.description === 'string'
            ? error.parentSchema.description
            : `must be ${JSON.stringify(params.allowedValue)}`
      };
    case 'additionalProperties':
      return {
        path: childPath(path, params.additionalProperty),
        message: 'is not a known field'
      };
    case 'minProperties':
      return {
        path,
        message: `needs at least ${params.limit} entr${params.limit === 1 ? 'y' : 'ies'}`
      };
    default:
      return { path, message: error.message ?? 'is not valid' };
  }
}

/**
 * Validates protocol v2 jobs, the short form and OpenPAI v1 JSON jobs against
 * the server's schema. `anyOf` branches are told apart up front, by the same
 * shape the server goes by, so errors talk about one of them.
 */
export class JobValidator {
  constructor(schema: Record<string, any>) {
    // verbose: errors carry their schema, whose description explains a `const`.
    const ajv = new Ajv2020({ allErrors: true, strict: false, verbose: true });
    const id: string = schema.$id ?? DEFAULT_ID;
    ajv.addSchema({ ...schema, $id: id });
    const defs = schema.$defs ?? {};
    const ref = (name: string) =>
      defs[name] ? ajv.compile({ $ref: `${id}#/$defs/${name}` }) : null;
    this._whole = ajv.getSchema(id) as ValidateFunction;
    this._protocol = ref('JobProtocol');
    this._short = ref('ShortForm');
    this._v1 = ref('OpenPAIv1Job');
  }

  validate(job: unknown): FieldError[] {
    const branch = {
      v1: this._v1,
      v2: this._protocol,
      short: this._short
    }[jobFormat(job) ?? 'short'];
    const validate = branch ?? this._whole;
    if (validate(job)) {
      return [];
    }
    const seen = new Set<string>();
    const errors: FieldError[] = [];
    for (const error of validate.errors ?? []) {
      // Branch noise from `anyOf` (e.g. "must be null") says nothing useful.
      if (error.keyword === 'anyOf' || error.keyword === 'if') {
        continue;
      }
      const { path, message } = describe(error);
      const key = `${path}\u0000${message}`;
      if (!seen.has(key)) {
        seen.add(key);
        errors.push({ path, message });
      }
    }
    return collapseAlternatives(errors);
  }

  private _whole: ValidateFunction;
  private _protocol: ValidateFunction | null;
  private _short: ValidateFunction | null;
  private _v1: ValidateFunction | null;
}

/** For a path with several alternative complaints ("must be string", "must be array"), keep one line. */
function collapseAlternatives(errors: FieldError[]): FieldError[] {
  const byPath = new Map<string, FieldError[]>();
  for (const e of errors) {
    byPath.set(e.path, [...(byPath.get(e.path) ?? []), e]);
  }
  const out: FieldError[] = [];
  for (const [path, list] of byPath) {
    const types = list.filter(e => e.message.startsWith('must be '));
    if (types.length > 1 && types.length === list.length) {
      out.push({
        path,
        message: types.map(e => e.message).join(' or ')
      });
    } else {
      out.push(...list);
    }
  }
  return out;
}

/**
 * Parse YAML and validate it; every error carries the line it is about.
 * A syntax error is reported as such, with its line, and no schema errors.
 */
export function validateYaml(
  text: string,
  validator: JobValidator | null
): { job: Record<string, any> | null; errors: LocatedError[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length) {
    return {
      job: null,
      errors: doc.errors.map(e => ({
        path: '',
        message: `YAML: ${e.message.split('\n')[0]}`,
        line: e.linePos?.[0]?.line ?? lineCounter.linePos(e.pos[0]).line
      }))
    };
  }
  const job = doc.toJS();
  if (!job || typeof job !== 'object' || Array.isArray(job)) {
    return {
      job: null,
      errors: [
        {
          path: '',
          message: 'a job is a YAML mapping: protocolVersion, name, taskRoles…',
          line: 1
        }
      ]
    };
  }
  if (!validator) {
    return { job, errors: [] };
  }
  const errors: LocatedError[] = validator.validate(job).map(error => {
    const line = lineOf(doc, lineCounter, error.path);
    return line === undefined ? error : { ...error, line };
  });
  return { job, errors };
}

/** Give errors (from the server) the YAML line they are about. */
export function locateErrors(
  text: string,
  errors: FieldError[]
): LocatedError[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length) {
    return errors;
  }
  return errors.map(error => {
    const line = lineOf(doc, lineCounter, normalise(error.path));
    return line === undefined ? error : { ...error, line };
  });
}

function normalise(path: string): string {
  return (path ?? '')
    .replace(/^\//, '')
    .replace(/\//g, '.')
    .replace(/\[(\w+)\]/g, '.$1');
}

function lineOf(
  doc: ReturnType<typeof parseDocument>,
  lineCounter: LineCounter,
  path: string
): number | undefined {
  const parts = path ? path.split('.') : [];
  // The deepest node that exists on the path (a missing key points at its parent).
  for (let n = parts.length; n >= 0; n--) {
    const keys = parts.slice(0, n).map(p => (/^\d+$/.test(p) ? Number(p) : p));
    const node = n === 0 ? doc.contents : doc.getIn(keys, true);
    if (isNode(node) && node.range) {
      return lineCounter.linePos(node.range[0]).line;
    }
  }
  return undefined;
}
