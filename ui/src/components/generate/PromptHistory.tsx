'use client';
/** The recent prompts, a small toggle in the prompt bar: the list opens upwards, over the picture; pick one to put
 * it back, or clear them all. */
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
    <div className="relative">
      <button
        type="button"
        className="whitespace-nowrap text-gray-400 hover:text-gray-200 disabled:opacity-40"
        disabled={!history.length}
        aria-expanded={open}
        onClick={() => setOpen(!open)}
        title="Recent prompts. Alt+↑/↓ in the prompt walks them; Ctrl/Cmd+Enter anywhere in the form generates"
        data-testid="prompt-history-toggle"
      >
        {open ? '▾' : '▴'} Recent ({history.length})
      </button>
      {open && history.length > 0 && (
        <div
          className="absolute bottom-full left-0 z-30 mb-2 w-[min(32rem,calc(100vw-2rem))] rounded border border-gray-700 bg-gray-950 shadow-xl lg:left-auto lg:right-0"
          data-testid="prompt-history"
        >
          <ul className="max-h-64 overflow-y-auto">
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
