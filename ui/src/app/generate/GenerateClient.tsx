'use client';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import EngineStrip from '@/components/generate/EngineStrip';
import Gallery from '@/components/generate/Gallery';
import ModelPanel from '@/components/generate/ModelPanel';
import PreviewPanel from '@/components/generate/PreviewPanel';
import PromptPanel from '@/components/generate/PromptPanel';
import QueueList from '@/components/generate/QueueList';
import {
  DEFAULT_SAMPLE, type ModelForm, type SampleForm, type StreamForm, generateBody, sampleDefaults, snap,
} from '@/components/generate/formState';
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
  const archs = useMemo(() => models.data ?? [], [models.data]);

  const [model, setModel] = useState<ModelForm>({ arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float16', loras: [] });
  const [sample, setSample] = useState<SampleForm>(DEFAULT_SAMPLE);
  const [stream, setStream] = useState<StreamForm>({ latents: 'x0', every_n_steps: 1 });
  const arch = archs.find((a) => a.arch === model.arch);

  // Once the arch list arrives: keep the chosen arch if the engine has it, and take its defaults.
  const defaultsApplied = useRef(false);
  useEffect(() => {
    if (!archs.length || defaultsApplied.current) return;
    defaultsApplied.current = true;
    const a = archs.find((x) => x.arch === model.arch) ?? archs[0];
    setModel((m) => ({ ...m, arch: a.arch }));
    setSample((s) => sampleDefaults(a, model.name_or_path, s));
  }, [archs, model.arch, model.name_or_path]);

  const changeArch = (name: string) => {
    const a = archs.find((x) => x.arch === name);
    if (!a) return;
    // tiny checkpoints follow the arch; a real path the user typed stays
    const path = !model.name_or_path || model.name_or_path.startsWith('tiny:') ? `tiny:${name}` : model.name_or_path;
    setModel({ ...model, arch: name, name_or_path: path });
    setSample(sampleDefaults(a, path, sample));
  };

  const [outputsVersion, setOutputsVersion] = useState(0);
  const onResult = useCallback(() => setOutputsVersion((v) => v + 1), []);
  const gen = useGeneration(jobId, online, onResult);
  const [submitError, setSubmitError] = useState<string | null>(null);

  // The form stays usable while runs go on: Generate queues another one in the engine.
  const generate = async () => {
    if (!arch) return;
    const snapped = { ...sample, width: snap(sample.width, arch.divisibility), height: snap(sample.height, arch.divisibility) };
    setSample(snapped);
    setSubmitError(await gen.submit(generateBody(arch, model, snapped, stream)));
  };

  const reuse = (entry: OutputEntry) => {
    const cfg = entry.meta?.config;
    if (!cfg) return;
    if (cfg.model?.arch) {
      const m = cfg.model;
      const loras = [...(m.lora_path ? [{ path: m.lora_path, multiplier: m.lora_multiplier ?? 1 }] : []), ...(m.loras ?? [])];
      setModel((old) => ({ ...old, arch: m.arch!, name_or_path: m.name_or_path ?? old.name_or_path, loras }));
    }
    setSample((s) => ({ ...s, ...(cfg.sample as Partial<SampleForm>), ctrl_img: '' }));
  };

  const missingControl = Boolean(arch && arch.control_images > 0 && !sample.ctrl_img);
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
          <ModelPanel archs={archs} model={model} onArch={changeArch} onChange={setModel} disabled={false} jobId={jobId} online={online} />
          <PromptPanel arch={arch} jobId={jobId} sample={sample} stream={stream} onSample={setSample} onStream={setStream} disabled={false} />
          <button
            className="btn-primary w-full py-2 text-base"
            disabled={!online || !arch || !sample.prompt.trim() || missingControl}
            onClick={() => void generate()}
            data-testid="generate"
          >
            {!online ? 'Start an engine first' : gen.busy ? 'Queue another' : 'Generate'}
          </button>
          {submitError && <div className="mt-2 text-sm text-rose-400" data-testid="submit-error">{submitError}</div>}
          {models.error && online && <div className="mt-2 text-sm text-rose-400">{models.error.message}</div>}
        </div>
        <div className="min-w-0 flex-1">
          <PreviewPanel view={gen.view} latent={gen.latent} busy={gen.busy} onCancel={gen.cancel} />
          <QueueList queue={gen.queue} onCancel={(id) => void gen.cancelRun(id)} />
          <Gallery jobId={jobId} online={online} version={outputsVersion} onReuse={reuse} />
        </div>
      </div>
    </div>
  );
}
