'use client';
/**
 * The engine's queue as the page sees it (`GET /queue`, polled by useGeneration): the running request and every
 * one waiting, with its place in line. Runs queued from another tab, a script or curl show too: the queue is the
 * engine's. Cancelling a waiting run removes it; the ones behind it move up.
 */
import type { QueueState } from '@/utils/runView';

interface Props {
  queue: QueueState;
  onCancel: (requestId: string) => void;
}

function label(prompt: string) {
  return prompt.length > 80 ? `${prompt.slice(0, 79)}…` : prompt;
}

export default function QueueList({ queue, onCancel }: Props) {
  if (!queue.running && !queue.pending.length) return null;
  return (
    <section className="card mb-4" data-testid="queue">
      <h2 className="mb-2 text-sm font-semibold">
        Queue <span className="font-normal text-gray-400">({queue.pending.length} waiting)</span>
      </h2>
      <ol className="space-y-1 text-sm">
        {queue.running && (
          <li className="flex min-w-0 items-center gap-2" data-testid="queue-running">
            <span className="shrink-0 rounded bg-sky-900 px-1.5 text-xs text-sky-200">running</span>
            <span className="truncate">{label(queue.running.prompt)}</span>
          </li>
        )}
        {queue.pending.map((row) => (
          <li key={row.request_id} className="flex min-w-0 items-center gap-2" data-testid="queue-item">
            <span className="shrink-0 rounded bg-gray-800 px-1.5 text-xs text-gray-300" data-testid="queue-position">
              #{row.position}
            </span>
            <span className="min-w-0 flex-1 truncate" title={row.prompt}>
              {label(row.prompt)}
              <span className="text-gray-500">
                {' '}· {row.arch} · seed {row.seed}
                {row.batch_count > 1 ? ` · ×${row.batch_count}` : ''}
              </span>
            </span>
            <button
              className="btn-ghost shrink-0 px-2 py-0.5 text-xs"
              onClick={() => onCancel(row.request_id)}
              aria-label={`Cancel queued run ${row.position}`}
              data-testid="queue-cancel"
            >
              Cancel
            </button>
          </li>
        ))}
      </ol>
    </section>
  );
}
