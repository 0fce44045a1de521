/** One row of the log viewer: a line of the log, the search text marked in it. */

/** Fill a row with text, every occurrence of `needle` in a <mark>. */
function highlight(row: HTMLElement, text: string, needle: string): void {
  const lower = text.toLowerCase();
  let at = 0;
  for (;;) {
    const i = lower.indexOf(needle, at);
    if (i < 0) {
      break;
    }
    if (i > at) {
      row.appendChild(document.createTextNode(text.slice(at, i)));
    }
    const mark = document.createElement('mark');
    mark.textContent = text.slice(i, i + needle.length);
    row.appendChild(mark);
    at = i + needle.length;
  }
  if (at < text.length) {
    row.appendChild(document.createTextNode(text.slice(at)));
  }
}

/**
 * A row for `text`; `needle` (lower case) is the search text, `current`
 * whether this is the match last found.
 */
export function createLogRow(
  text: string,
  needle: string,
  current: boolean
): HTMLDivElement {
  const row = document.createElement('div');
  row.className = 'jp-PAI-log-line';
  if (current) {
    row.classList.add('jp-mod-current');
  }
  if (needle && text.toLowerCase().includes(needle)) {
    highlight(row, text, needle);
  } else {
    // An empty line keeps its height.
    row.textContent = text || '\u200b';
  }
  return row;
}
