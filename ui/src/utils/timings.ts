/** One line under a finished result: where its time went (the engine's `result.timings`). */
export function timingsText(timings: Record<string, number | null> | undefined): string {
  if (!timings) return '';
  const s = (v: number | null | undefined) => (typeof v === 'number' ? `${v.toFixed(2)} s` : null);
  const parts = [
    s(timings.load_s) && `load ${s(timings.load_s)}`,
    s(timings.sample_s) &&
      `sampling ${s(timings.sample_s)}${typeof timings.step_s === 'number' ? ` (${timings.step_s.toFixed(3)} s/step)` : ''}`,
    s(timings.save_s) && `saving ${s(timings.save_s)}`,
    s(timings.total_s) && `total ${s(timings.total_s)}`,
  ];
  return parts.filter(Boolean).join(' · ');
}
