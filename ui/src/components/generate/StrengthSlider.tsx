'use client';
/**
 * How much of a start image or video is re-noised (`sample.strength`, 0-1): the value the engine runs with, and
 * "(default)" while none is picked (the engine then picks its task's default).
 */
interface Props {
  id: string;
  value: number;
  picked: boolean;
  what: string;
  disabled: boolean;
  onChange: (value: number) => void;
}

export default function StrengthSlider({ id, value, picked, what, disabled, onChange }: Props) {
  return (
    <div>
      <label className="label flex items-center gap-2" htmlFor={id}>
        Strength
        <span className="tabular-nums text-gray-200" data-testid={`${id}-value`}>
          {value.toFixed(2)}
        </span>
        {!picked && <span className="text-gray-500">(default)</span>}
      </label>
      <input
        id={id}
        type="range"
        min={0}
        max={1}
        step={0.05}
        value={value}
        disabled={disabled}
        onChange={(e) => onChange(Number(e.target.value))}
        className="w-full"
        title={`How much of the ${what} is re-noised: 0 keeps it, 1 keeps nothing`}
        data-testid={id}
      />
    </div>
  );
}
