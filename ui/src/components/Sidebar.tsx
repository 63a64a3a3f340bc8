'use client';
/** Navigation plus the active jobs (AI Toolkit's ActiveJobWidget): what runs or waits right now. */
import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { type Job, displayStatus } from '@/utils/types';

const LINKS = [
  { href: '/generate', label: 'Generate' },
  { href: '/jobs', label: 'Jobs' },
];

export default function Sidebar() {
  const pathname = usePathname();
  const { data } = usePoll(() => apiJson<{ jobs: Job[] }>('/api/jobs?only_active=true'), 3000);
  return (
    <nav className="flex w-52 shrink-0 flex-col border-r border-gray-800 bg-gray-900/60 p-3">
      <div className="mb-5 px-2 pt-1">
        <div className="text-sm font-semibold text-gray-100">AI Toolkit</div>
        <div className="text-xs text-gray-500">inference engine</div>
      </div>
      {LINKS.map((link) => {
        const active = pathname === link.href || pathname.startsWith(`${link.href}/`);
        return (
          <Link
            key={link.href}
            href={link.href}
            className={`mb-1 rounded px-2 py-1.5 text-sm ${active ? 'bg-gray-800 text-white' : 'text-gray-300 hover:bg-gray-800/60'}`}
          >
            {link.label}
          </Link>
        );
      })}
      <div className="mt-6 px-2">
        <div className="label">Active</div>
        {!data?.jobs.length && <div className="text-xs text-gray-500">nothing running</div>}
        {data?.jobs.map((job) => (
          <Link key={job.id} href={`/jobs/${job.id}`} className="mb-2 block rounded bg-gray-800/60 p-2 text-xs hover:bg-gray-800">
            <div className="truncate font-medium text-gray-200">{job.name}</div>
            <div className="truncate text-gray-400">{job.info || displayStatus(job)}</div>
          </Link>
        ))}
      </div>
    </nav>
  );
}
