'use client';
/** The recent-prompts list under the prompt field: pick one to put it back, or clear them all. */
import { useState } from 'react';

interface Props {
  history: string[];
  onPick: (prompt: string) => void;
  onClear: () => void;
  disabled: boolean;
}

export default function PromptHistory({ history, onPick, onClear, disabled }: Props) {
  const [open, setOpen] = useState(false);
  return (
    <div className="mb-2 text-xs">
      <div className="flex items-center justify-between gap-3 text-gray-400">
        <button type="button" className="whitespace-nowrap hover:text-gray-200 disabled:opacity-40" disabled={!history.length} aria-expanded={open} onClick={() => setOpen(!open)} data-testid="prompt-history-toggle">
          {open ? '▾' : '▸'} Recent prompts ({history.length})
        </button>
        <span className="truncate text-gray-600" title="Alt+↑/↓ in the prompt walks the recent prompts; Ctrl/Cmd+Enter anywhere in the form generates">
          Alt+↑/↓ recall · Ctrl+Enter runs
        </span>
      </div>
      {open && history.length > 0 && (
        <div className="mt-1 rounded border border-gray-800 bg-gray-950" data-testid="prompt-history">
          <ul className="max-h-48 overflow-y-auto">
            {history.map((p) => (
              <li key={p}>
                <button
                  type="button"
                  className="block w-full truncate px-2 py-1 text-left text-gray-300 hover:bg-gray-800"
                  title={p}
                  disabled={disabled}
                  onClick={() => {
                    onPick(p);
                    setOpen(false);
                  }}
                  data-testid="prompt-history-item"
                >
                  {p}
                </button>
              </li>
            ))}
          </ul>
          <button
            type="button"
            className="w-full border-t border-gray-800 px-2 py-1 text-left text-gray-500 hover:text-rose-400"
            onClick={() => {
              onClear();
              setOpen(false);
            }}
            data-testid="prompt-history-clear"
          >
            Clear history
          </button>
        </div>
      )}
    </div>
  );
}
