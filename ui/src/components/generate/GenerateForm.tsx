'use client';
/**
 * The left column of /generate: model and prompt panels and the Generate button, which says why it is
 * disabled. Ctrl/Cmd+Enter anywhere in the column generates; an image dropped on the page restores its settings.
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
  busy: boolean;
  onGenerate: (body: NonNullable<ReturnType<GenerateFormState['body']>>) => void;
  error?: string;
}

export default function GenerateForm({ form, archs, jobId, online, busy, onGenerate, error }: Props) {
  const { model, sample, stream, arch } = form;
  const [uploading, setUploading] = useState(false);
  const history = usePromptHistory();
  const errors = fieldErrors(arch, sample);
  const reason = blockReason({ online, arch, busy, uploading, sample, modelPath: model.name_or_path });
  const canRun = !busy && !reason;

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
      <ModelPanel archs={archs} model={model} onArch={form.changeArch} onChange={form.setModel} disabled={busy} jobId={jobId} online={online} />
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
        disabled={busy}
      />
      <button className="btn-primary w-full py-2 text-base" disabled={!canRun} onClick={generate} title={reason ?? 'Ctrl+Enter'} data-testid="generate">
        {busy ? 'Generating…' : online ? 'Generate' : 'Start an engine first'}
      </button>
      {reason && online && !busy && (
        <div className="mt-1 text-sm text-amber-400" role="status" data-testid="generate-reason">
          {reason}
        </div>
      )}
      <RestoreDrop onRestore={form.restore} disabled={busy} />
      {error && <div className="mt-2 text-sm text-rose-400">{error}</div>}
    </div>
  );
}
