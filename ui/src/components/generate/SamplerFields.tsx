/**
 * Sampler and schedule type, as A1111 and Forge show them. The engine swaps the scheduler on the resident model for
 * the request (no reload), so changing them costs nothing; "Model's own" runs the checkpoint's scheduler as shipped.
 */
import type { ArchInfo } from '@/utils/types';
import { SCHEDULE_LABELS, type SampleForm, samplerFor, samplersOf, scheduleFor, schedulesOf } from './formState';

interface Props {
  arch: ArchInfo | undefined;
  sample: SampleForm;
  disabled: boolean;
  onChange: (sampler: string, scheduler: string) => void;
}

export default function SamplerFields({ arch, sample, disabled, onChange }: Props) {
  const listed = samplersOf(arch);
  if (!listed.length) return null; // an engine that predates samplers
  const sampler = samplerFor(arch, sample.sampler);
  const schedules = schedulesOf(arch, sampler);
  const schedule = scheduleFor(arch, sampler, sample.scheduler);
  const own = arch?.default_sampler ? `Model's own (${arch.default_sampler})` : "Model's own";
  return (
    <>
      <div>
        <label className="label" htmlFor="sampler">
          Sampler
        </label>
        <select id="sampler" className="input" value={sampler} disabled={disabled} data-testid="sampler" onChange={(e) => onChange(e.target.value, scheduleFor(arch, e.target.value, schedule))}>
          <option value="">{own}</option>
          {listed.map((s) => (
            <option key={s.name} value={s.name}>
              {s.name}
            </option>
          ))}
        </select>
      </div>
      <div>
        <label className="label" htmlFor="scheduler">
          Schedule type
        </label>
        <select id="scheduler" className="input" value={schedule} disabled={disabled || schedules.length < 2} data-testid="scheduler" onChange={(e) => onChange(sampler, e.target.value)}>
          {schedules.map((s) => (
            <option key={s} value={s}>
              {SCHEDULE_LABELS[s] ?? s}
            </option>
          ))}
        </select>
      </div>
    </>
  );
}
