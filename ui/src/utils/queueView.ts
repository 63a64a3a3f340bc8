/** What the queue list says about each row: its ETA and where the move buttons send it (pure, tested as data). */
import type { QueueRow } from './runView';

/** `12 s`, `3 min 5 s`, `1 h 2 min`; `—` when unknown. */
export function durationText(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
}

const BASIS: Record<string, string> = {
  measured: 'from runs of the same model, size and steps on this engine',
  scaled: 'from a run of the same model and size, its steps rescaled',
  rate: 'from the running request’s step rate (same model and size)',
};

/** The row's ETA text and the tooltip that says what it rests on. */
export function etaOf(row: Pick<QueueRow, 'eta_s' | 'eta_basis'>, running = false): { text: string; title: string } {
  if (row.eta_s === null || row.eta_s === undefined) {
    return { text: 'ETA unknown', title: running ? 'no step yet and nothing like it measured' : 'nothing like it (or ahead of it) has run on this engine yet' };
  }
  const title = running ? 'its steps left at its current rate, plus the rest of its batch' : `${BASIS[row.eta_basis ?? ''] ?? ''}; every run ahead of it included`;
  return { text: `ETA ${durationText(row.eta_s)}`, title };
}

/** The place each move button asks for; null where the row cannot go that way. */
export function moveTargets(position: number, waiting: number): { top: number | null; up: number | null; down: number | null } {
  return {
    top: position > 1 ? 1 : null,
    up: position > 1 ? position - 1 : null,
    down: position < waiting ? position + 1 : null,
  };
}
