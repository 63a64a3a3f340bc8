'use client';
/**
 * Navigation plus the active jobs (AI Toolkit's ActiveJobWidget): what runs or waits right now. From `md` up
 * it is a column beside the page; below, a 208 px column would leave a phone ~180 px of page, so it folds
 * into a top bar whose menu button opens it as a drawer over the page.
 */
import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { useEffect, useState } from 'react';
import { usePoll } from '@/hooks/usePoll';
import { apiJson } from '@/utils/api';
import { type Job, displayStatus } from '@/utils/types';

const LINKS = [
  { href: '/generate', label: 'Generate' },
  { href: '/jobs', label: 'Jobs' },
];

function NavContent({ pathname, jobs }: { pathname: string; jobs: Job[] | undefined }) {
  return (
    <>
      <div className="mb-5 hidden px-2 pt-1 md:block">
        <div className="text-sm font-semibold text-gray-100">AI Toolkit</div>
        <div className="text-xs text-gray-500">inference engine</div>
      </div>
      {LINKS.map((link) => {
        const active = pathname === link.href || pathname.startsWith(`${link.href}/`);
        return (
          <Link
            key={link.href}
            href={link.href}
            aria-current={active ? 'page' : undefined}
            className={`mb-1 rounded px-2 py-1.5 text-sm ${active ? 'bg-gray-800 text-white' : 'text-gray-300 hover:bg-gray-800/60'}`}
          >
            {link.label}
          </Link>
        );
      })}
      <div className="mt-6 px-2">
        <div className="label">Active</div>
        {!jobs?.length && <div className="text-xs text-gray-500">nothing running</div>}
        {jobs?.map((job) => (
          <Link key={job.id} href={`/jobs/${job.id}`} className="mb-2 block rounded bg-gray-800/60 p-2 text-xs hover:bg-gray-800">
            <div className="truncate font-medium text-gray-200">{job.name}</div>
            <div className="truncate text-gray-400">{job.info || displayStatus(job)}</div>
          </Link>
        ))}
      </div>
    </>
  );
}

export default function Sidebar() {
  const pathname = usePathname();
  const { data } = usePoll(() => apiJson<{ jobs: Job[] }>('/api/jobs?only_active=true'), 3000);
  const [open, setOpen] = useState(false);

  // The drawer opens under the top bar, so the same button (now "Close the menu") stays where the finger is.
  // A link followed from the drawer lands on a page the drawer would cover: it closes.
  useEffect(() => setOpen(false), [pathname]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && setOpen(false);
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);

  return (
    <>
      <header className="sticky top-0 z-50 flex items-center gap-3 border-b border-gray-800 bg-gray-900/95 px-3 py-2 md:hidden">
        <button
          className="btn-ghost px-2 py-1"
          onClick={() => setOpen((o) => !o)}
          aria-label={open ? 'Close the menu' : 'Open the menu'}
          aria-expanded={open}
          aria-controls="sidebar-nav"
          data-testid="menu-button"
        >
          <svg width="18" height="18" viewBox="0 0 18 18" aria-hidden="true">
            <path d="M2 4h14M2 9h14M2 14h14" stroke="currentColor" strokeWidth="2" strokeLinecap="round" />
          </svg>
        </button>
        <div className="text-sm font-semibold text-gray-100">AI Toolkit</div>
        <div className="truncate text-xs text-gray-500">inference engine</div>
      </header>
      {open && <div className="fixed inset-0 z-30 bg-black/60 md:hidden" onClick={() => setOpen(false)} aria-hidden="true" />}
      <nav
        id="sidebar-nav"
        aria-label="Main"
        className={`${open ? 'fixed inset-y-0 left-0 z-40 flex w-64 max-w-[85vw] overflow-y-auto pt-16 shadow-xl' : 'hidden'} flex-col border-r border-gray-800 bg-gray-900 p-3 md:static md:flex md:w-52 md:shrink-0 md:bg-gray-900/60 md:shadow-none`}
        data-testid="sidebar"
      >
        <NavContent pathname={pathname} jobs={data?.jobs} />
      </nav>
    </>
  );
}
