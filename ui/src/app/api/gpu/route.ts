/** GPUs for the engine picker, from nvidia-smi; an empty list on machines without one (the engine runs on CPU). */
import { execFile } from 'node:child_process';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

interface Gpu {
  index: number;
  name: string;
  memory_total_mb: number;
  memory_used_mb: number;
}

function querySmi(): Promise<Gpu[]> {
  return new Promise((resolve) => {
    execFile(
      'nvidia-smi',
      ['--query-gpu=index,name,memory.total,memory.used', '--format=csv,noheader,nounits'],
      { timeout: 5000 },
      (err, stdout) => {
        if (err) return resolve([]);
        resolve(
          stdout
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((line) => {
              const [index, name, total, used] = line.split(',').map((s) => s.trim());
              return { index: Number(index), name, memory_total_mb: Number(total), memory_used_mb: Number(used) };
            }),
        );
      },
    );
  });
}

export async function GET() {
  const gpus = await querySmi();
  return Response.json({ hasNvidiaSmi: gpus.length > 0, gpus });
}
