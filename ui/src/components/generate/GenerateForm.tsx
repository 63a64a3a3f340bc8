'use client';
/**
 * The left column of /generate: model and prompt panels and the Generate button, which says why it is
 * disabled. Ctrl/Cmd+Enter anywhere in the column generates; an image dropped on the page restores its settings.
 * Nothing here is disabled while a run goes on: Generate then queues another run in the engine.
 */
import { type KeyboardEvent, useState } from 'react';
import type { ArchInfo } from '@/utils/types';
import { blockReason, fieldErrors } from './formChecks';
import ModelPanel from './ModelPanel';
import PromptPanel from './PromptPanel';
import RestoreDrop from './RestoreDrop';
import type { GenerateFormState } from './useGenerateForm';
import { usePromptHistory } from './usePromptHistory';

interface Props {
  form: GenerateFormState;
  archs: ArchInfo[];
  jobId: string | null;
  online: boolean;
  running: boolean; // a run is going on: Generate queues behind it
  onGenerate: (body: NonNullable<ReturnType<GenerateFormState['body']>>) => void;
  error?: string;
}

export default function GenerateForm({ form, archs, jobId, online, running, onGenerate, error }: Props) {
  const { model, sample, stream, arch } = form;
  const [uploading, setUploading] = useState(false);
  const history = usePromptHistory();
  const errors = fieldErrors(arch, sample);
  const reason = blockReason({ online, arch, busy: false, uploading, sample, modelPath: model.name_or_path });
  const canRun = !reason;

  const generate = () => {
    if (!canRun) return;
    const body = form.body();
    if (!body) return;
    history.add(sample.prompt);
    onGenerate(body);
  };

  const keys = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey)) return;
    e.preventDefault(); // no newline in the prompt
    generate();
  };

  return (
    <div onKeyDown={keys} data-testid="generate-form">
      <ModelPanel archs={archs} model={model} onArch={form.changeArch} onChange={form.setModel} disabled={false} jobId={jobId} online={online} />
      <PromptPanel
        arch={arch}
        modelPath={model.name_or_path}
        jobId={jobId}
        sample={sample}
        stream={stream}
        onSample={form.setSample}
        onStream={form.setStream}
        errors={errors}
        history={history.history}
        onClearHistory={history.clear}
        onUploading={setUploading}
        disabled={false}
      />
      <button className="btn-primary w-full py-2 text-base" disabled={!canRun} onClick={generate} title={reason ?? 'Ctrl+Enter'} data-testid="generate">
        {!online ? 'Start an engine first' : running ? 'Queue another' : 'Generate'}
      </button>
      {reason && online && (
        <div className="mt-1 text-sm text-amber-400" role="status" data-testid="generate-reason">
          {reason}
        </div>
      )}
      <RestoreDrop onRestore={form.restore} disabled={false} />
      {error && <div className="mt-2 text-sm text-rose-400" data-testid="submit-error">{error}</div>}
    </div>
  );
}
