'use client';
/**
 * The bar under the picture: the prompt, Generate, the recent prompts and "restore from an image". It stays on
 * screen at every width (sticky at the bottom of the window), and the page's messages float just above it, over
 * the picture's lower edge: where the eye is after pressing Generate or dropping an image.
 */
import { type KeyboardEvent, type ReactNode, useState } from 'react';
import { stepHistory } from '@/utils/promptHistory';
import PromptHistory from './PromptHistory';

export interface Notice {
  id: string; // its data-testid
  tone: 'ok' | 'warn' | 'error';
  text: string;
  role?: 'status' | 'alert';
  onDismiss?: () => void;
}

interface Props {
  prompt: string;
  onPrompt: (prompt: string) => void;
  history: string[];
  onClearHistory: () => void;
  label: string; // the Generate button's words
  canRun: boolean;
  title: string; // why it cannot run, else the shortcut
  onGenerate: () => void;
  notices: Notice[];
  restore: ReactNode; // RestoreDrop
  onKeyDown: (e: KeyboardEvent<HTMLDivElement>) => void;
}

const TONES = { ok: 'border-emerald-800 text-emerald-300', warn: 'border-amber-800 text-amber-300', error: 'border-rose-800 text-rose-300' };

function Notices({ notices }: { notices: Notice[] }) {
  if (!notices.length) return null;
  return (
    <div className="pointer-events-none absolute inset-x-0 bottom-full z-20 mb-2 flex flex-col items-end gap-1 px-2" data-testid="notices">
      {notices.map((n) => (
        <div key={n.id} className={`pointer-events-auto flex max-w-full items-start gap-2 rounded border bg-gray-950/95 px-2 py-1 text-sm shadow-lg ${TONES[n.tone]}`}>
          <span className="min-w-0 break-words" role={n.role} data-testid={n.id}>
            {n.text}
          </span>
          {n.onDismiss && (
            <button type="button" className="shrink-0 text-gray-400 hover:text-gray-100" onClick={n.onDismiss} aria-label="Dismiss" data-testid={`${n.id}-dismiss`}>
              ×
            </button>
          )}
        </div>
      ))}
    </div>
  );
}

export default function PromptBar(props: Props) {
  const { prompt, onPrompt, history, onClearHistory, label, canRun, title, onGenerate, notices, restore, onKeyDown } = props;
  // Alt+Up/Down through recent prompts: -1 is the prompt being written, kept to come back to
  const [recall, setRecall] = useState({ index: -1, draft: '' });

  const promptKeys = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (!e.altKey || (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') || !history.length) return;
    e.preventDefault();
    const index = stepHistory(history.length, recall.index, e.key === 'ArrowUp' ? 'older' : 'newer');
    const draft = recall.index === -1 ? prompt : recall.draft;
    setRecall({ index, draft });
    onPrompt(index === -1 ? draft : history[index]);
  };

  return (
    <div className="gen-bar" onKeyDown={onKeyDown} data-testid="prompt-bar">
      <Notices notices={notices} />
      <div className="flex flex-col gap-2 rounded-lg border border-gray-800 bg-gray-900 p-2 lg:flex-row">
        <label className="sr-only" htmlFor="prompt">
          Prompt
        </label>
        <textarea
          id="prompt"
          className="input gen-prompt min-w-0 flex-1 resize-none"
          placeholder="Describe the picture"
          value={prompt}
          onChange={(e) => {
            setRecall({ index: -1, draft: '' });
            onPrompt(e.target.value);
          }}
          onKeyDown={promptKeys}
          data-testid="prompt"
        />
        <div className="flex shrink-0 items-stretch gap-3 lg:w-48 lg:flex-col lg:gap-1">
          <button className="btn-primary order-last min-h-9 flex-1 text-base lg:order-first" disabled={!canRun} onClick={onGenerate} title={title} data-testid="generate">
            {label}
          </button>
          <div className="flex items-center gap-3 text-xs lg:justify-between">
            <PromptHistory
              history={history}
              disabled={false}
              onClear={onClearHistory}
              onPick={(p) => {
                setRecall({ index: -1, draft: '' });
                onPrompt(p);
              }}
            />
            {restore}
          </div>
        </div>
      </div>
    </div>
  );
}
