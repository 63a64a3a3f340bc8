'use client';
import { useCallback, useEffect, useRef, useState } from 'react';

/**
 * Poll `load` every `intervalMs` while mounted (and `enabled`); `refresh()` loads at once. Errors are kept,
 * not thrown: a page keeps showing the last good data while a server restarts.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, enabled = true, forgetWhenDisabled = false) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const loadRef = useRef(load);
  loadRef.current = load;

  const refresh = useCallback(async () => {
    try {
      setData(await loadRef.current());
      setError(null);
    } catch (e) {
      setError(e as Error);
    }
  }, []);

  useEffect(() => {
    if (!enabled) {
      // `forgetWhenDisabled`: what was loaded belongs to what was enabled (an engine stopped or killed and
      // started again must not show the old one's health while the new one starts).
      if (forgetWhenDisabled) {
        setData(null);
        setError(null);
      }
      return;
    }
    let stopped = false;
    let timer: ReturnType<typeof setTimeout>;
    const tick = async () => {
      await refresh();
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [enabled, intervalMs, refresh, forgetWhenDisabled]);

  return { data, error, refresh };
}
