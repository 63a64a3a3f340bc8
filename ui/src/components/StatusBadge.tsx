const COLOURS: Record<string, string> = {
  running: 'bg-sky-900 text-sky-200 border-sky-700',
  queued: 'bg-amber-900 text-amber-200 border-amber-700',
  stopping: 'bg-orange-900 text-orange-200 border-orange-700',
  stopped: 'bg-gray-800 text-gray-300 border-gray-600',
  completed: 'bg-emerald-900 text-emerald-200 border-emerald-700',
  error: 'bg-rose-900 text-rose-200 border-rose-700',
};

export default function StatusBadge({ status, testId }: { status: string; testId?: string }) {
  return (
    <span
      data-testid={testId}
      className={`inline-block rounded border px-2 py-0.5 text-xs font-medium ${COLOURS[status] ?? COLOURS.stopped}`}
    >
      {status}
    </span>
  );
}
