import { describe, expect, it } from 'vitest';
import { timingsText } from '@/utils/timings';

describe('timingsText', () => {
  it('says where a request spent its time', () => {
    expect(timingsText({ load_s: 0.1342, sample_s: 2.0149, step_s: 0.17034, save_s: 0.2193, total_s: 2.39, hook_ms: 0.64 })).toBe(
      'load 0.13 s · sampling 2.01 s (0.170 s/step) · saving 0.22 s · total 2.39 s',
    );
  });

  it('leaves out what the engine did not report', () => {
    expect(timingsText({ load_s: 0, sample_s: 1.5, step_s: null, total_s: 1.6 })).toBe(
      'load 0.00 s · sampling 1.50 s · total 1.60 s',
    );
    expect(timingsText(undefined)).toBe('');
  });
});
