'use client';
/**
 * The Generate page's layout, built around the picture (the grid is `.gen-*` in globals.css): the stage (the
 * live preview and the result) as large as the window allows, the prompt bar under it that stays on screen at
 * every width, and the settings (model and sampling) in a side panel that scrolls on its own; the engine strip
 * and the queue top that panel, the results follow the stage. Below `lg` the same pieces are one column:
 * engine, stage, queue, settings, results, with the prompt bar stuck to the bottom of the window.
 *
 * The form's own part: the Generate button, which says why it is disabled; Ctrl/Cmd+Enter in the bar or the
 * settings generates; an image dropped on the page restores its settings. Nothing is disabled while a run goes
 * on: Generate then queues another run in the engine.
 */
import { type KeyboardEvent, type ReactNode, useState } from 'react';
import type { ArchInfo } from '@/utils/types';
import { blockReason, fieldErrors } from './formChecks';
import ModelPanel from './ModelPanel';
import PromptBar, { type Notice } from './PromptBar';
import PromptPanel from './PromptPanel';
import RestoreDrop, { type RestoreStatus } from './RestoreDrop';
import StartImage from './StartImage';
import StartVideo from './StartVideo';
import { takesStartImage, takesStartVideo } from './fromImage';
import type { GenerateFormState } from './useGenerateForm';
import { usePromptHistory } from './usePromptHistory';

/** After Generate, the stage comes into view if it is not (a phone scrolled down to the settings, a desktop to the
 * results): the run is what one wants to watch then. */
function showStage() {
  const stage = document.querySelector<HTMLElement>('.gen-stage');
  const bar = document.querySelector<HTMLElement>('.gen-bar');
  if (!stage || !bar) return;
  const r = stage.getBoundingClientRect();
  const top = parseFloat(getComputedStyle(stage).scrollMarginTop) || 0; // what covers the window's top edge
  if (r.top < top - 1 || r.bottom > bar.getBoundingClientRect().top + 1) stage.scrollIntoView({ block: 'start', behavior: 'smooth' });
}

interface Props {
  form: GenerateFormState;
  archs: ArchInfo[];
  jobId: string | null;
  online: boolean;
  running: boolean; // a run is going on: Generate queues behind it
  onGenerate: (body: NonNullable<ReturnType<GenerateFormState['body']>>) => void;
  error?: string;
  /** the page's other pieces, placed here so that one grid holds them all */
  engine: ReactNode;
  stage: ReactNode;
  queue: ReactNode;
  results: ReactNode;
}

export default function GenerateForm({ form, archs, jobId, online, running, onGenerate, error, engine, stage, queue, results }: Props) {
  const { model, sample, stream, arch } = form;
  const [uploadingControls, setUploading] = useState(false);
  const [startUploading, setStartUploading] = useState(false);
  const [maskUploading, setMaskUploading] = useState(false);
  const uploading = uploadingControls || startUploading || maskUploading;
  const [restored, setRestored] = useState<RestoreStatus | null>(null);
  const history = usePromptHistory();
  const errors = fieldErrors(arch, sample);
  const reason = blockReason({ online, arch, busy: false, uploading, sample, modelPath: model.name_or_path });
  const canRun = !reason;

  const [maskError, setMaskError] = useState('');
  const generate = async () => {
    if (!canRun) return;
    setMaskError('');
    setMaskUploading(true); // a painted mask is uploaded before the request goes
    const body = await form.requestBody(jobId).catch((e: Error) => void setMaskError(`Mask upload failed: ${e.message}`));
    setMaskUploading(false);
    if (!body) return;
    history.add(sample.prompt);
    onGenerate(body);
    showStage();
  };

  const keys = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey)) return;
    e.preventDefault(); // no newline in the prompt
    void generate();
  };

  const notices: Notice[] = [];
  if (reason && online) notices.push({ id: 'generate-reason', tone: 'warn', text: reason, role: 'status' });
  if (error) notices.push({ id: 'submit-error', tone: 'error', text: error, role: 'alert' });
  if (maskError) notices.push({ id: 'mask-error', tone: 'error', text: maskError, role: 'alert' });
  if (restored) notices.push({ id: 'restore-status', tone: restored.ok ? 'ok' : 'error', text: restored.text, onDismiss: () => setRestored(null) });

  return (
    <div className="gen-page">
      <h1 className="sr-only">Generate</h1>
      <div className="gen-main">
        {stage}
        <div className="gen-results">{results}</div>
        <PromptBar
          prompt={sample.prompt}
          onPrompt={(prompt) => form.setSample((s) => ({ ...s, prompt }))}
          history={history.history}
          onClearHistory={history.clear}
          label={!online ? 'Start an engine first' : running ? 'Queue another' : 'Generate'}
          canRun={canRun}
          title={reason ?? 'Ctrl+Enter'}
          onGenerate={generate}
          notices={notices}
          restore={<RestoreDrop onRestore={form.restore} disabled={false} onStatus={setRestored} />}
          onKeyDown={keys}
        />
      </div>
      <div className="gen-side" data-testid="side-panel">
        <div className="gen-engine">{engine}</div>
        <div className="gen-queue">{queue}</div>
        <div className="gen-settings" onKeyDown={keys} data-testid="generate-form" data-ready={form.ready}>
          <ModelPanel archs={archs} model={model} onArch={form.changeArch} onChange={form.setModel} onPick={form.pickModel} disabled={false} jobId={jobId} online={online} />
          {arch && takesStartImage(arch) && (
            <StartImage arch={arch} jobId={jobId} sample={sample} onSample={form.setSample} mask={form.mask} onUploading={setStartUploading} disabled={false} />
          )}
          {arch && takesStartVideo(arch) && <StartVideo jobId={jobId} sample={sample} onSample={form.setSample} onUploading={setStartUploading} disabled={false} />}
          <PromptPanel
            arch={arch}
            modelPath={model.name_or_path}
            jobId={jobId}
            sample={sample}
            stream={stream}
            onSample={form.setSample}
            onStream={form.setStream}
            errors={errors}
            onUploading={setUploading}
            disabled={false}
          />
        </div>
      </div>
    </div>
  );
}
