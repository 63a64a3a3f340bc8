'use client';
/**
 * When the server has AI_TOOLKIT_AUTH set, API calls without the token get 401; apiFetch then fires
 * AUTH_EVENT and this asks for the token (kept in localStorage, as AI Toolkit's UI does).
 */
import { useEffect, useState } from 'react';
import { AUTH_EVENT, setToken } from '@/utils/api';

export default function AuthGate({ children }: { children: React.ReactNode }) {
  const [needed, setNeeded] = useState(false);
  const [value, setValue] = useState('');
  const [error, setError] = useState('');

  useEffect(() => {
    const onAuth = () => setNeeded(true);
    window.addEventListener(AUTH_EVENT, onAuth);
    return () => window.removeEventListener(AUTH_EVENT, onAuth);
  }, []);

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    const res = await fetch('/api/auth', { headers: { authorization: `Bearer ${value}` } });
    if (!res.ok) return setError('That token was refused.');
    setToken(value);
    setNeeded(false);
    location.reload();
  }

  return (
    <>
      {children}
      {needed && (
        <div className="fixed inset-0 z-50 flex items-center justify-center bg-black/70">
          <form onSubmit={submit} className="card w-96">
            <h2 className="mb-2 text-lg font-semibold">Token required</h2>
            <p className="mb-3 text-sm text-gray-400">This UI runs with AI_TOOLKIT_AUTH. Enter the token to continue.</p>
            <input className="input mb-2" type="password" value={value} onChange={(e) => setValue(e.target.value)} autoFocus />
            {error && <div className="mb-2 text-sm text-rose-400">{error}</div>}
            <button className="btn-primary w-full" type="submit">
              Continue
            </button>
          </form>
        </div>
      )}
    </>
  );
}
