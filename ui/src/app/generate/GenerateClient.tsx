'use client';
import { useCallback, useMemo } from 'react';
import EngineStrip from '@/components/generate/EngineStrip';
import Gallery from '@/components/generate/Gallery';
import GenerateForm from '@/components/generate/GenerateForm';
import PreviewPanel from '@/components/generate/PreviewPanel';
import { fromConfig } from '@/components/generate/restore';
import { useGenerateForm } from '@/components/generate/useGenerateForm';
import { useEngines } from '@/hooks/useEngines';
import { useGeneration } from '@/hooks/useGeneration';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import type { ArchInfo, OutputEntry } from '@/utils/types';

export default function GenerateClient({ initialJobId }: { initialJobId: string | null }) {
  const engines = useEngines(initialJobId);
  const jobId = engines.selected?.id ?? null;
  const online = Boolean(engines.health?.ok);
  const q = `job=${encodeURIComponent(jobId ?? '')}`;

  const models = usePoll(() => apiJson<ArchInfo[]>(`/api/inference/models?${q}`), 30000, online);
  const outputs = usePoll(() => apiJson<OutputEntry[]>(`/api/inference/outputs?${q}&limit=60`), 10000, online);
  const archs = useMemo(() => models.data ?? [], [models.data]);

  // the form (its state, memory, defaults and restoring) lives in components/generate; see useGenerateForm
  const form = useGenerateForm(archs, engines.health?.device);

  const refreshOutputs = outputs.refresh;
  const onFinished = useCallback(() => void refreshOutputs(), [refreshOutputs]);
  const gen = useGeneration(jobId, onFinished);

  // Reuse keeps everything the sidecar's resolved request says, control images included
  const reuse = (entry: OutputEntry) => {
    const cfg = entry.meta?.config;
    if (cfg) form.restore(fromConfig(cfg));
  };

  return (
    <div className="mx-auto max-w-[1500px]">
      <h1 className="mb-4 text-xl font-semibold">Generate</h1>
      <EngineStrip
        jobs={engines.jobs}
        selected={engines.selected}
        onSelect={engines.select}
        health={engines.health}
        healthError={engines.healthError}
        onStart={engines.start}
        onStop={engines.stop}
      />
      <div className="flex flex-col gap-4 lg:flex-row">
        <div className="w-full shrink-0 lg:w-96">
          <GenerateForm form={form} archs={archs} jobId={jobId} online={online} busy={gen.busy} onGenerate={gen.run} error={online ? models.error?.message : undefined} />
        </div>
        <div className="min-w-0 flex-1">
          <PreviewPanel view={gen.view} latent={gen.latent} busy={gen.busy} onCancel={gen.cancel} />
          <Gallery outputs={outputs.data ?? []} onReuse={reuse} />
        </div>
      </div>
    </div>
  );
}
