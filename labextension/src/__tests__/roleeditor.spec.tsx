/**
 * The role editor's GPU type select: shown only where the VC has types (or
 * the role has one), labelled with free counts, at the skuType's data-path,
 * with server errors at that path underneath.
 */
import * as React from 'react';
import { act } from 'react';

import { newRole, type RoleForm } from '../jobform';
import { RoleEditor } from '../roleeditor';
import type { FieldError, VirtualCluster } from '../restmodels';
import { reactRoot, TYPED_VC, UNTYPED_VC } from './gputypefixtures';

const PATH = 'extras.hivedScheduler.taskRoles.worker.skuType';

async function renderRole(
  role: RoleForm,
  vc: VirtualCluster | undefined,
  errors = new Map<string, FieldError[]>()
): Promise<{ host: HTMLElement; changes: RoleForm[]; unmount: () => void }> {
  const { host, root } = await reactRoot();
  const changes: RoleForm[] = [];
  await act(async () => {
    root.render(
      <RoleEditor
        role={role}
        index={0}
        canRemove={false}
        vc={vc}
        errors={errors}
        onChange={r => changes.push(r)}
        onRemove={() => undefined}
      />
    );
  });
  return {
    host,
    changes,
    unmount: () => {
      act(() => root.unmount());
      host.remove();
    }
  };
}

function typeSelect(host: HTMLElement): HTMLSelectElement | null {
  return host.querySelector(`[data-path="${PATH}"] select`);
}

describe('RoleEditor GPU type', () => {
  it('shows nothing new where the VC has no GPU types', async () => {
    const untyped = await renderRole(newRole(), UNTYPED_VC);
    const absent = await renderRole(newRole(), {
      ...UNTYPED_VC,
      gpuTypes: undefined
    });
    const ids = (h: HTMLElement) => h.innerHTML.replace(/field-\d+/g, 'id');
    expect(typeSelect(untyped.host)).toBeNull();
    expect(untyped.host.textContent).not.toContain('GPU type');
    expect(typeSelect(absent.host)).toBeNull();
    expect(ids(untyped.host)).toBe(ids(absent.host));
    untyped.unmount();
    absent.unmount();
  });

  it('offers any type and the VC types with free counts', async () => {
    const r = await renderRole(newRole(), TYPED_VC);
    const select = typeSelect(r.host)!;
    expect(select).not.toBeNull();
    expect(select.value).toBe('');
    const label = r.host.querySelector(`label[for="${select.id}"]`);
    expect(label?.textContent).toBe('GPU type');
    expect([...select.options].map(o => o.textContent)).toEqual([
      'Any type',
      'A100-40GB — 12 of 16 free',
      'H100-80GB — 16 of 16 free'
    ]);
    await act(async () => {
      select.value = 'A100-40GB';
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
    expect(r.changes.pop()).toEqual({ ...newRole(), gpuType: 'A100-40GB' });
    // The GPU count keeps its field and its bound (the VC's GPUs).
    const gpus = r.host.querySelector<HTMLInputElement>(
      '[data-path="taskRoles.worker.resourcePerInstance.gpu"] input'
    );
    expect(gpus?.max).toBe('32');
    r.unmount();
  });

  it('shows a type the VC does not list as chosen', async () => {
    const role = { ...newRole(), gpuType: 'H100-80GB' };
    const r = await renderRole(role, UNTYPED_VC);
    const select = typeSelect(r.host)!;
    expect(select.value).toBe('H100-80GB');
    expect(select.selectedOptions[0].textContent).toBe(
      'H100-80GB (not in this VC)'
    );
    r.unmount();
  });

  it('shows a server error at the skuType under the select', async () => {
    const errors = new Map([[PATH, [{ path: PATH, message: 'no T4 here' }]]]);
    const r = await renderRole(
      { ...newRole(), gpuType: 'T4-SHARED' },
      TYPED_VC,
      errors
    );
    const field = r.host.querySelector(`[data-path="${PATH}"]`)!;
    expect(field.classList).toContain('jp-mod-invalid');
    const list = field.querySelector('[role="alert"]')!;
    expect(list.textContent).toBe('no T4 here');
    expect(typeSelect(r.host)!.getAttribute('aria-describedby')).toBe(list.id);
    r.unmount();
  });
});
