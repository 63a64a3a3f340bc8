'use client';
import { useCallback, useMemo, useState } from 'react';
import ComparePanel from '@/components/generate/ComparePanel';
import EngineStrip from '@/components/generate/EngineStrip';
import Gallery from '@/components/generate/Gallery';
import GenerateForm from '@/components/generate/GenerateForm';
import PreviewPanel from '@/components/generate/PreviewPanel';
import QueueList from '@/components/generate/QueueList';
import { archChoice } from '@/components/generate/archOptions';
import { isImageResult, isVideoResult, namesEngineFiles, takesStartImage, takesStartVideo, tasksOf, upscaleBody } from '@/components/generate/fromImage';
import { fromConfig } from '@/components/generate/restore';
import { type GenerateFormState, useGenerateForm } from '@/components/generate/useGenerateForm';
import { useCompareMode } from '@/hooks/useCompareMode';
import { useEngineHandoff } from '@/hooks/useEngineHandoff';
import { useEngines } from '@/hooks/useEngines';
import { useGeneration } from '@/hooks/useGeneration';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { pickEngine } from '@/utils/pickEngine';
import type { ArchInfo, OutputEntry, UpscalerFile } from '@/utils/types';

type GenerateBody = NonNullable<ReturnType<GenerateFormState['body']>> | NonNullable<ReturnType<typeof upscaleBody>>;

export default function GenerateClient({ initialJobId }: { initialJobId: string | null }) {
  const engines = useEngines(initialJobId);
  const jobId = engines.selected?.id ?? null;
  const online = Boolean(engines.health?.ok);
  const q = `job=${encodeURIComponent(jobId ?? '')}`;

  const models = usePoll(() => apiJson<ArchInfo[]>(`/api/inference/models?${q}`), 30000, online);
  const archs = useMemo(() => models.data ?? [], [models.data]);
  // the upscaler files "Upscale ×2" may resize with (GET /upscalers); '' is Lanczos
  const upscalerFiles = usePoll(() => apiJson<{ upscalers: UpscalerFile[] }>(`/api/inference/upscalers?${q}`), 60000, online);
  const [upscaler, setUpscaler] = useState('');

  // the form (its state, memory, defaults and restoring) lives in components/generate; see useGenerateForm
  const form = useGenerateForm(archs, engines.health?.device);

  const [outputsVersion, setOutputsVersion] = useState(0);
  const onResult = useCallback(() => setOutputsVersion((v) => v + 1), []);
  const gen = useGeneration(jobId, online, onResult);
  const [submitError, setSubmitError] = useState<string | null>(null);

  // The form stays usable while runs go on: Generate queues another one in the engine.
  const { submit } = gen;
  const submitHere = useCallback(async (body: unknown) => setSubmitError(await submit(body)), [submit]);
  const sendTo = useEngineHandoff(jobId, submitHere);

  const generate = (body: GenerateBody) => {
    if (!engines.anyEngine) return void submitHere(body);
    // control images, start images and masks are this engine's files: uploads to its assets, or its results
    const hasControls = namesEngineFiles(body.sample);
    const pick = pickEngine(engines.candidates, body.model, hasControls ? jobId : null);
    if (!pick) return setSubmitError(hasControls ? 'The engine holding the images this run starts from is not ready' : 'No engine is ready');
    engines.noteSent({ ...pick, model: body.model });
    sendTo(pick.jobId, body);
  };

  // Reuse keeps everything the sidecar's resolved request says, control images included
  const reuse = (entry: OutputEntry) => {
    const cfg = entry.meta?.config;
    if (cfg) form.restore(fromConfig(cfg));
  };

  // a result as the start image, or upscaled by its own family with its own settings (fromImage.ts)
  const useAsInput = takesStartImage(form.arch) || takesStartVideo(form.arch) ? form.startFrom : undefined;
  const canUseAsInput = (entry: OutputEntry) => (isVideoResult(entry) ? takesStartVideo(form.arch) : isImageResult(entry) && takesStartImage(form.arch));
  const canUpscale = (entry: OutputEntry) => {
    const family = archChoice(archs, String(entry.meta?.config?.model?.arch ?? ''));
    return isImageResult(entry) && tasksOf(family).includes('img2img') && upscaleBody(entry) !== null;
  };
  const upscale = (entry: OutputEntry) => {
    const body = upscaleBody(entry, undefined, upscaler);
    if (body) generate(body);
  };

  // Compare mode (ComparePanel): a training job's checkpoints as a grid, in place of the single-run stage
  const [compare, toggleCompare] = useCompareMode();
  const compareToggle = (
    <button type="button" className={`btn-ghost mt-2 w-full text-sm ${compare ? 'bg-gray-800' : ''}`} aria-pressed={compare} onClick={toggleCompare} data-testid="compare-mode">
      {compare ? 'Back to single runs' : 'Compare checkpoints'}
    </button>
  );

  const requested = form.sample.width / form.sample.height;
  return (
    <GenerateForm
      form={form}
      archs={archs}
      jobId={jobId}
      online={online}
      running={gen.busy}
      onGenerate={generate}
      error={submitError ?? (online ? models.error?.message : undefined)}
      engine={<><EngineStrip engines={engines} />{compareToggle}</>}
      stage={
        compare ? (
          <ComparePanel jobId={jobId} online={online} base={form.body} formPrompt={form.sample.prompt} onReuse={reuse} onResult={onResult} />
        ) : (
          <PreviewPanel view={gen.view} latent={gen.latent} busy={gen.busy} onCancel={gen.cancel} requested={requested} />
        )
      }
      queue={<QueueList queue={gen.queue} onCancel={(id) => void gen.cancelRun(id)} onMove={gen.moveRun} onCancelAll={gen.cancelAll} view={gen.view} latent={gen.latent} />}
      results={<Gallery jobId={jobId} online={online} version={outputsVersion} onReuse={reuse} onUseAsInput={useAsInput} canUseAsInput={canUseAsInput} canUpscale={canUpscale} onUpscale={upscale} upscalers={upscalerFiles.data?.upscalers} upscaler={upscaler} onUpscaler={setUpscaler} />}
    />
  );
}
