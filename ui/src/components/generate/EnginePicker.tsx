'use client';
/** Every engine job with its status and health, and "Any engine": where Generate sends runs. */
import StatusBadge from '@/components/StatusBadge';
import { ANY_ENGINE, type SentPick } from '@/hooks/useEngines';
import type { HealthReading } from '@/hooks/useEngineHealths';
import { engineSummary, sentToText } from '@/utils/engineHealth';
import { type Job, displayStatus } from '@/utils/types';

interface Props {
  jobs: Job[];
  /** ANY_ENGINE or the chosen job's id */
  choice: string | null;
  onChoose: (jobIdOrAny: string) => void;
  healthOf: (job: Job) => HealthReading;
  /** where "Any engine" sent the last run */
  sent: SentPick | null;
}

const OPTION = 'flex min-w-0 cursor-pointer flex-wrap items-center gap-x-2 gap-y-1 rounded px-2 py-1 text-sm hover:bg-gray-800/60';

export default function EnginePicker({ jobs, choice, onChoose, healthOf, sent }: Props) {
  const sentTo = sent && jobs.find((j) => j.id === sent.jobId);
  return (
    <fieldset className="mt-3 min-w-0 border-t border-gray-800 pt-2" data-testid="engine-picker">
      <legend className="sr-only">Send runs to</legend>
      <label className={OPTION} data-testid="engine-any">
        <input type="radio" name="engine" checked={choice === ANY_ENGINE} onChange={() => onChoose(ANY_ENGINE)} />
        <span className="font-medium">Any engine</span>
        <span className="text-gray-400">the one that holds the form&apos;s model, else the one with the least work waiting</span>
      </label>
      {choice === ANY_ENGINE && sentTo && (
        <div className="break-words pb-1 pl-8 text-sm text-sky-300" data-testid="engine-sent-to" data-job-id={sentTo.id}>
          Last run {sentToText(sentTo.name, sent)}
        </div>
      )}
      {jobs.map((job) => (
        <EngineOption key={job.id} job={job} reading={healthOf(job)} checked={choice === job.id} onChoose={onChoose} />
      ))}
    </fieldset>
  );
}

function EngineOption({ job, reading, checked, onChoose }: { job: Job; reading: HealthReading; checked: boolean; onChoose: (id: string) => void }) {
  const status = displayStatus(job);
  return (
    <label className={OPTION} data-testid="engine-option" data-job-id={job.id} data-status={status}>
      <input type="radio" name="engine" checked={checked} onChange={() => onChoose(job.id)} />
      <span className="break-all font-medium">{job.name}</span>
      <span className="text-xs text-gray-400">GPU {job.gpu_ids}</span>
      <StatusBadge status={status} />
      <span className="min-w-0 break-words text-gray-400" data-testid="engine-option-health">
        {engineSummary(job, reading.health)}
      </span>
    </label>
  );
}
