'use client';
/**
 * Sending a run to another engine than the one the page follows. useGeneration follows one engine's runs (its
 * frames and queue), so the page switches to that engine first and submits once it follows it: the run is then
 * followed exactly as one sent to the engine picked by hand.
 */
import { useCallback, useEffect, useState } from 'react';

export function useEngineHandoff(followedJobId: string | null, submit: (body: unknown) => void) {
  const [pending, setPending] = useState<{ jobId: string; body: unknown } | null>(null);

  useEffect(() => {
    if (!pending || pending.jobId !== followedJobId) return;
    setPending(null);
    submit(pending.body);
  }, [pending, followedJobId, submit]);

  /** Submit now when `jobId` is followed already; else after the caller's switch to it has rendered. */
  return useCallback(
    (jobId: string, body: unknown) => (jobId === followedJobId ? submit(body) : setPending({ jobId, body })),
    [followedJobId, submit],
  );
}
