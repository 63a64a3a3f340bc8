'use client';
/** Recent prompts kept in localStorage (utils/promptHistory), loaded after mount so the server render matches. */
import { useCallback, useEffect, useState } from 'react';
import { addPrompt, loadHistory, saveHistory } from '@/utils/promptHistory';

export function usePromptHistory() {
  const [history, setHistory] = useState<string[]>([]);
  useEffect(() => setHistory(loadHistory(localStorage)), []);
  const update = useCallback((next: string[]) => {
    setHistory(next);
    try {
      saveHistory(localStorage, next);
    } catch {
      /* storage disabled: history lasts for this page only */
    }
  }, []);
  const add = useCallback((prompt: string) => update(addPrompt(loadHistory(localStorage), prompt)), [update]);
  const clear = useCallback(() => update([]), [update]);
  return { history, add, clear };
}
