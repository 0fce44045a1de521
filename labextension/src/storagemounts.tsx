/** The storages a job mounts: which storage, where, whether read-only. */

import * as React from 'react';

import type { MountForm } from './jobform';
import { KeyValueRows } from './keyvaluerows';
import type { FieldError, Storage } from './restmodels';

export interface IStorageMountsProps {
  mounts: MountForm[];
  /** The storages configured for the user. */
  storages: Storage[];
  errors: Map<string, FieldError[]>;
  onChange: (mounts: MountForm[]) => void;
}

export function StorageMounts(props: IStorageMountsProps): JSX.Element {
  const { storages, errors } = props;
  const known = (mount: MountForm) => storages.find(s => s.name === mount.name);
  return (
    <>
      <KeyValueRows
        rows={props.mounts}
        onChange={props.onChange}
        keyCell={{
          label: (_, i) => `storage ${i + 1}`,
          text: mount => mount.name,
          // Another storage brings its own mount path and read-only flag.
          set: (mount, name) => {
            const s = storages.find(x => x.name === name);
            return {
              ...mount,
              name,
              mountPath: s?.mountPath ?? mount.mountPath,
              readOnly: s?.readOnly ?? mount.readOnly
            };
          },
          choices: mount => {
            const names = storages.map(s => s.name);
            return known(mount) ? names : [mount.name, ...names];
          }
        }}
        valueCell={{
          label: (_, i) => `mount path of storage ${i + 1}`,
          text: mount => mount.mountPath,
          set: (mount, mountPath) => ({ ...mount, mountPath }),
          placeholder: mount => `/mnt/${mount.name}`,
          grow: true
        }}
        extra={(mount, set) => (
          <label className="jp-PAI-check" title="Mount read-only">
            <input
              type="checkbox"
              checked={mount.readOnly}
              disabled={known(mount)?.readOnly}
              onChange={e => set({ ...mount, readOnly: e.target.checked })}
            />
            RO
          </label>
        )}
        removeLabel={mount => `Remove storage ${mount.name}`}
        wrap={(_, i, content) => {
          const at = `extras.storages.${i}`;
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
              {content}
              {fieldErrors.length > 0 && (
                <ul className="jp-PAI-field-errors" role="alert">
                  {fieldErrors.map((e, i) => (
                    <li key={i}>{e.message}</li>
                  ))}
                </ul>
              )}
            </div>
          );
        }}
        add={
          storages.length
            ? {
                label: '+ Mount a storage',
                // The first storage not mounted yet, else the first.
                row: mounts => {
                  const pick =
                    storages.find(s => !mounts.some(m => m.name === s.name)) ??
                    storages[0];
                  return {
                    name: pick.name,
                    mountPath: pick.mountPath,
                    readOnly: pick.readOnly
                  };
                }
              }
            : undefined
        }
      />
      {storages.length === 0 && (
        <div className="jp-PAI-hint">No storage is configured for you.</div>
      )}
    </>
  );
}
