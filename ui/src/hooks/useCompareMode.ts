'use client';
/**
 * Whether the Generate page shows Compare mode (components/generate/ComparePanel.tsx) in place of the single-run
 * stage, kept in localStorage so that a reload comes back to the grid it was watching.
 */
import { useCallback, useEffect, useState } from 'react';

const KEY = 'aitk-compare-mode';

export function useCompareMode(): [boolean, () => void] {
  const [on, setOn] = useState(false);
  useEffect(() => setOn(localStorage.getItem(KEY) === '1'), []); // after hydration: the server renders it off
  const toggle = useCallback(() => {
    setOn((was) => {
      localStorage.setItem(KEY, was ? '0' : '1');
      return !was;
    });
  }, []);
  return [on, toggle];
}
