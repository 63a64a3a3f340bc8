/** Recent prompts, newest first, kept in localStorage: capped, each prompt once. */

export const HISTORY_KEY = 'aitk.generate.promptHistory';
export const HISTORY_CAP = 50;

type Storage = Pick<globalThis.Storage, 'getItem' | 'setItem' | 'removeItem'>;

/** The prompt moves to the front when it was already there; blank prompts are not history. */
export function addPrompt(history: string[], prompt: string, cap = HISTORY_CAP): string[] {
  const p = prompt.trim();
  if (!p) return history;
  return [p, ...history.filter((h) => h !== p)].slice(0, cap);
}

export function loadHistory(storage: Storage): string[] {
  try {
    const parsed = JSON.parse(storage.getItem(HISTORY_KEY) ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((p): p is string => typeof p === 'string').slice(0, HISTORY_CAP) : [];
  } catch {
    return []; // a hand-edited or foreign value must not break the page
  }
}

export function saveHistory(storage: Storage, history: string[]) {
  if (history.length) storage.setItem(HISTORY_KEY, JSON.stringify(history));
  else storage.removeItem(HISTORY_KEY);
}

/**
 * Alt+Up/Down through the history: index -1 is the prompt being written, 0 the newest entry. Returns the new
 * index, clamped to the history.
 */
export function stepHistory(length: number, index: number, direction: 'older' | 'newer'): number {
  return direction === 'older' ? Math.min(length - 1, index + 1) : Math.max(-1, index - 1);
}
