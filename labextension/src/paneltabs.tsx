/** The side panel's tabs: Launch, Jobs (with a count of live jobs), Storage, Cluster. */

import * as React from 'react';

import type { PAIModel, PanelSection } from './panelstate';

const SECTIONS: Array<{ id: PanelSection; label: string }> = [
  { id: 'launch', label: 'Launch' },
  { id: 'jobs', label: 'Jobs' },
  { id: 'storage', label: 'Storage' },
  { id: 'cluster', label: 'Cluster' }
];

/** Arrow keys, Home and End move between the tabs, as WAI-ARIA tabs do. */
export function PanelTabs(props: { model: PAIModel }): JSX.Element {
  const { model } = props;
  const refs = React.useRef<Array<HTMLButtonElement | null>>([]);
  const onKey = (event: React.KeyboardEvent, i: number) => {
    let next = -1;
    if (event.key === 'ArrowRight') {
      next = (i + 1) % SECTIONS.length;
    } else if (event.key === 'ArrowLeft') {
      next = (i + SECTIONS.length - 1) % SECTIONS.length;
    } else if (event.key === 'Home') {
      next = 0;
    } else if (event.key === 'End') {
      next = SECTIONS.length - 1;
    }
    if (next >= 0) {
      event.preventDefault();
      model.section = SECTIONS[next].id;
      refs.current[next]?.focus();
    }
  };
  const waiting = model.myJobs().filter(j => j.state === 'WAITING').length;
  const running = model.myJobs().filter(j => j.state === 'RUNNING').length;
  return (
    <div className="jp-PAI-tabs" role="tablist" aria-label="PAI">
      {SECTIONS.map((s, i) => {
        const selected = model.section === s.id;
        return (
          <button
            key={s.id}
            ref={el => (refs.current[i] = el)}
            type="button"
            role="tab"
            id={`jp-PAI-tab-${s.id}`}
            aria-selected={selected}
            aria-controls={`jp-PAI-section-${s.id}`}
            tabIndex={selected ? 0 : -1}
            className={`jp-PAI-tab ${selected ? 'jp-mod-current' : ''}`}
            onClick={() => (model.section = s.id)}
            onKeyDown={e => onKey(e, i)}
          >
            {s.label}
            {s.id === 'jobs' && running + waiting > 0 && (
              <span
                className="jp-PAI-badge"
                title={`${running} running, ${waiting} waiting`}
              >
                {running + waiting}
              </span>
            )}
          </button>
        );
      })}
    </div>
  );
}
