/**
 * A gallery result dragged onto a control-image slot: the slot takes the result's path on the engine's machine
 * as `ctrl_img` (the engine accepts any file inside its output folder: request_checks.py), so nothing is uploaded
 * again. The payload rides in its own MIME type; a drop from elsewhere (a file, another site's image) has none
 * and takes the upload path.
 */
import type { OutputEntry } from './types';

export const OUTPUT_DRAG_TYPE = 'application/x-aitk-output';

export interface DraggedOutput {
  name: string;
  path: string;
  url: string;
}

export function dragPayload(entry: Pick<OutputEntry, 'name' | 'path' | 'url'>): string {
  return JSON.stringify({ name: entry.name, path: entry.path, url: entry.url });
}

/** The dragged result, or null when the drop carries none (or a payload that is not ours). */
export function draggedOutput(read: (type: string) => string): DraggedOutput | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(read(OUTPUT_DRAG_TYPE) || 'null');
  } catch {
    return null;
  }
  const p = parsed as Partial<DraggedOutput> | null;
  if (!p || typeof p.name !== 'string' || typeof p.path !== 'string' || typeof p.url !== 'string') return null;
  if (!p.path || !p.url.startsWith('/api/files/')) return null;
  return { name: p.name, path: p.path, url: p.url };
}
