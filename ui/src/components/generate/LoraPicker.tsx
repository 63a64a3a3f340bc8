'use client';
/**
 * LoRAs from the engine's LoRA roots (GET /loras): the ones AI Toolkit trained, under the training folder, show
 * their job, step and family. Several at once, each with its multiplier; the engine refuses, by name, a LoRA
 * the chosen family cannot take.
 */
import { useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import type { LoraChoice, LoraEntry } from '@/utils/types';
import { familyOf } from './archOptions';

const MAX_LORAS = 8; // the engine's cap (server.py MAX_LORAS)

interface Props {
  jobId: string | null;
  online: boolean;
  arch: string;
  loras: LoraChoice[];
  onChange: (loras: LoraChoice[]) => void;
  disabled: boolean;
}

export function loraLabel(e: LoraEntry): string {
  const parts = [e.job ?? e.name];
  if (e.step != null) parts.push(`step ${e.step}`);
  if (e.arch) parts.push(e.arch);
  return parts.join(' · ');
}

export default function LoraPicker({ jobId, online, arch, loras, onChange, disabled }: Props) {
  const listing = usePoll(
    () => apiJson<{ loras: LoraEntry[] }>(`/api/inference/loras?job=${encodeURIComponent(jobId ?? '')}`).then((r) => r.loras),
    15000,
    online,
  );
  const [pick, setPick] = useState('');
  const entries = listing.data ?? [];
  const chosen = new Set(loras.map((l) => l.path));
  const available = entries.filter((e) => !chosen.has(e.path));
  const add = () => {
    const entry = entries.find((e) => e.path === pick);
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
      <div className="flex gap-2">
        <select className="input flex-1" value={pick} disabled={disabled || !available.length || loras.length >= MAX_LORAS} onChange={(e) => setPick(e.target.value)} data-testid="lora-select">
          <option value="">{available.length ? 'Add a LoRA…' : 'no LoRA files under the engine’s LoRA folders'}</option>
          {available.map((e) => (
            <option key={e.path} value={e.path} title={e.path}>
              {loraLabel(e)}
              {e.arch && familyOf(e.arch) !== arch ? ' (other family)' : ''}
            </option>
          ))}
        </select>
        <button type="button" className="btn-ghost" disabled={disabled || !pick} onClick={add} data-testid="lora-add">
          Add
        </button>
      </div>
      {loras.map((l, i) => (
        <div key={l.path} className="mt-2 flex items-center gap-2 text-sm" data-testid="lora-chosen">
          <span className="min-w-0 flex-1 truncate" title={l.path}>
            {l.label ?? l.path}
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
      ))}
    </div>
  );
}
