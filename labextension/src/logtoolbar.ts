/** The log viewer's toolbar: search, previous and next match, search earlier, start, end, download. */

export interface ILogToolbarOptions {
  /** The task, `worker-0`: names the toolbar. */
  task: string;
  /** The whole log's URL, and the name of the file it downloads as. */
  downloadUrl: string;
  downloadName: string;
  /** Find `query`; `direction` 1 = next, -1 = previous. */
  onFind: (query: string, direction: 1 | -1) => void;
  /** The search text was typed (a moment after the last key). */
  onQuery: (query: string) => void;
  /** Escape cleared the search text. */
  onClear: () => void;
  onFindEarlier: (query: string) => void;
  onStart: () => void;
  onEnd: () => void;
}

export interface ILogToolbar {
  node: HTMLDivElement;
  search: HTMLInputElement;
  /** How many lines match, where. */
  searchStatus: HTMLSpanElement;
  /** "Search earlier": only while the log's start is not in memory. */
  earlierButton: HTMLButtonElement;
}

function button(
  label: string,
  title: string,
  onClick: () => void
): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'jp-mod-styled jp-PAI-log-button';
  b.textContent = label;
  b.title = title;
  b.setAttribute('aria-label', title);
  b.addEventListener('click', onClick);
  return b;
}

function spacer(): HTMLElement {
  const s = document.createElement('span');
  s.className = 'jp-PAI-spacer';
  return s;
}

export function createLogToolbar(options: ILogToolbarOptions): ILogToolbar {
  const node = document.createElement('div');
  node.className = 'jp-PAI-log-toolbar';
  node.setAttribute('role', 'toolbar');
  node.setAttribute('aria-label', `Log of ${options.task}`);

  const search = document.createElement('input');
  search.type = 'search';
  search.className = 'jp-mod-styled jp-PAI-input jp-PAI-log-search';
  search.placeholder = 'Search log…';
  search.setAttribute('aria-label', 'Search the log');
  search.addEventListener('keydown', event => {
    if (event.key === 'Enter') {
      event.preventDefault();
      options.onFind(search.value, event.shiftKey ? -1 : 1);
    } else if (event.key === 'Escape') {
      search.value = '';
      options.onClear();
    }
  });
  let timer = 0;
  search.addEventListener('input', () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(() => options.onQuery(search.value), 200);
  });

  const searchStatus = document.createElement('span');
  searchStatus.className = 'jp-PAI-muted jp-PAI-log-search-status';
  searchStatus.setAttribute('aria-live', 'polite');

  const earlierButton = button(
    'Search earlier',
    'Read earlier parts of the log until the text is found',
    () => options.onFindEarlier(search.value)
  );
  earlierButton.hidden = true;

  const download = document.createElement('a');
  download.className = 'jp-mod-styled jp-PAI-log-button';
  download.textContent = 'Download';
  download.title = 'Download the whole log';
  download.href = options.downloadUrl;
  download.download = options.downloadName;

  node.append(
    search,
    button('↑', 'Previous match (Shift+Enter)', () =>
      options.onFind(search.value, -1)
    ),
    button('↓', 'Next match (Enter)', () => options.onFind(search.value, 1)),
    searchStatus,
    earlierButton,
    spacer(),
    button('⤒ Start', 'Jump to the start of the log (Home)', options.onStart),
    button(
      '⤓ End',
      'Jump to the end and follow new output (End)',
      options.onEnd
    ),
    download
  );
  return { node, search, searchStatus, earlierButton };
}
