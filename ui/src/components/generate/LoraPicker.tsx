'use client';
/**
 * The LoRA library (GET /loras): every LoRA under the engine's LoRA roots by the name a person knows it by (its
 * training job and step, or its folder for a diffusers-format file), searchable by that name, its file, family
 * or trigger words. Several at once, each with its multiplier; a chosen LoRA shows its trigger words and its
 * run's sample image. The same LoRAs can be named in the prompt as `<lora:name:0.8>` (the tag the library
 * shows); the engine refuses, by name, a LoRA the chosen family cannot take or a tag naming none.
 */
import { useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import type { LoraChoice } from '@/utils/types';
import { familyOf } from './archOptions';
import { type LibraryLora, loraLabel, loraTag, searchLoras } from './library';

export { loraLabel } from './library';

const MAX_LORAS = 8; // the engine's cap (server.py MAX_LORAS)

interface Props {
  jobId: string | null;
  online: boolean;
  arch: string;
  loras: LoraChoice[];
  onChange: (loras: LoraChoice[]) => void;
  disabled: boolean;
}

export default function LoraPicker({ jobId, online, arch, loras, onChange, disabled }: Props) {
  const listing = usePoll(
    () => apiJson<{ loras: LibraryLora[] }>(`/api/inference/loras?job=${encodeURIComponent(jobId ?? '')}`).then((r) => r.loras),
    15000,
    online,
  );
  const [pick, setPick] = useState('');
  const [query, setQuery] = useState('');
  const entries = listing.data ?? [];
  const byPath = new Map(entries.map((e) => [e.path, e]));
  const chosen = new Set(loras.map((l) => l.path));
  const available = searchLoras(
    entries.filter((e) => !chosen.has(e.path)),
    query,
  );
  const add = (path: string) => {
    const entry = entries.find((e) => e.path === path);
    if (!entry) return;
    onChange([...loras, { path: entry.path, multiplier: 1, label: loraLabel(entry) }]);
    setPick('');
  };
  const set = (i: number, change: Partial<LoraChoice>) => onChange(loras.map((l, j) => (j === i ? { ...l, ...change } : l)));

  return (
    <div className="mt-3" data-testid="lora-picker">
      <div className="label flex items-center justify-between">
        <span>LoRAs</span>
        <button type="button" className="text-xs text-gray-400 hover:text-gray-200" onClick={() => void listing.refresh()} data-testid="lora-refresh">
          refresh
        </button>
      </div>
      <input
        className="input mb-1"
        type="search"
        placeholder="Search LoRAs: job, file, trigger word"
        value={query}
        onChange={(e) => {
          setQuery(e.target.value);
          const first = searchLoras(entries.filter((x) => !chosen.has(x.path)), e.target.value)[0];
          setPick(e.target.value && first ? first.path : '');
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && pick) {
            e.preventDefault();
            add(pick);
          }
        }}
        aria-label="search the LoRA library"
        data-testid="lora-search"
      />
      <div className="flex gap-2">
        <select className="input flex-1" value={pick} disabled={disabled || !available.length || loras.length >= MAX_LORAS} onChange={(e) => setPick(e.target.value)} data-testid="lora-select">
          <option value="">{available.length ? `Add a LoRA… (${available.length})` : entries.length ? 'no LoRA matches' : 'no LoRA files under the engine’s LoRA folders'}</option>
          {available.map((e) => (
            <option key={e.path} value={e.path} title={e.path}>
              {loraLabel(e)}
              {e.arch && familyOf(e.arch) !== arch ? ' (other family)' : ''}
            </option>
          ))}
        </select>
        <button type="button" className="btn-ghost" disabled={disabled || !pick} onClick={() => add(pick)} data-testid="lora-add">
          Add
        </button>
      </div>
      {loras.map((l, i) => {
        const entry = byPath.get(l.path);
        return (
          <div key={l.path} className="mt-2 rounded border border-gray-800 p-1.5 text-sm" data-testid="lora-chosen">
            <div className="flex items-center gap-2">
              {entry?.preview_url ? (
                <img src={entry.preview_url} alt="" className="h-9 w-9 shrink-0 rounded object-cover" loading="lazy" data-testid="lora-preview" />
              ) : null}
              <span className="min-w-0 flex-1 truncate" title={l.path}>
                {l.label ?? (entry ? loraLabel(entry) : l.path)}
              </span>
              <input
                type="number"
                step={0.05}
                min={-10}
                max={10}
                className="input w-20"
                value={l.multiplier}
                disabled={disabled}
                onChange={(e) => set(i, { multiplier: Number(e.target.value) })}
                aria-label="multiplier"
                data-testid="lora-multiplier"
              />
              <button type="button" className="text-xs text-gray-400 hover:text-rose-400" disabled={disabled} onClick={() => onChange(loras.filter((_, j) => j !== i))} data-testid="lora-remove">
                remove
              </button>
            </div>
            {entry && (
              <div className="mt-1 text-xs text-gray-500">
                {entry.trigger_words?.length ? (
                  <span data-testid="lora-triggers">
                    trigger: <span className="text-gray-300 select-all">{entry.trigger_words.join(', ')}</span> ·{' '}
                  </span>
                ) : null}
                in a prompt: <code className="select-all">{loraTag(entry, l.multiplier)}</code>
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}
