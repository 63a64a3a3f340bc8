'use client';
/**
 * Which engine, on which GPU, and is it alive: the engine the page works with and its /health, start and stop,
 * and with several engine jobs the list to send runs to one of them or to any.
 */
import StatusBadge from '@/components/StatusBadge';
import type { Engines } from '@/hooks/useEngines';
import { healthText } from '@/utils/engineHealth';
import { displayStatus } from '@/utils/types';
import EngineControls from './EngineControls';
import EnginePicker from './EnginePicker';

export default function EngineStrip({ engines }: { engines: Engines }) {
  const { jobs, selected, health, healthError, anyEngine } = engines;
  return (
    <section className="card mb-4" data-testid="engine-strip">
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2">
        <div className="flex min-w-0 max-w-full flex-wrap items-center gap-2">
          <span className="text-sm font-semibold">Engine</span>
          {anyEngine && <span className="text-sm text-gray-400">any ·</span>}
          <span className="break-all text-sm text-gray-300" data-testid="engine-name">
            {selected?.name ?? 'none yet'}
          </span>
          {selected && <StatusBadge status={displayStatus(selected)} testId="engine-status" />}
        </div>
        {/* wraps rather than truncates: on a phone the health line is what says why the engine is not ready */}
        <div className="min-w-0 flex-1 basis-full break-words text-sm text-gray-300 sm:basis-auto" data-testid="engine-health" title={selected?.info}>
          {healthText(selected, health, healthError)}
          {/* an idle engine's info restates the health line (state and model): only progress and start-up add to it */}
          {selected?.info && selected.status === 'running' && !(health?.ok && !health.busy) && <span className="ml-2 text-gray-500">— {selected.info}</span>}
          {selected && selected.status === 'error' && <span className="ml-2 text-rose-400">{selected.info}</span>}
        </div>
        <EngineControls jobs={jobs} selected={anyEngine ? null : selected} onStart={engines.start} onStop={engines.stop} />
      </div>
      {(jobs.length > 1 || anyEngine) && (
        <EnginePicker jobs={jobs} choice={engines.choice} onChoose={engines.select} healthOf={engines.healthOf} sent={engines.sent} />
      )}
    </section>
  );
}
