import type { Metadata } from 'next';
import './globals.css';
import Sidebar from '@/components/Sidebar';
import AuthGate from '@/components/AuthGate';

export const metadata: Metadata = {
  title: 'AI Toolkit — inference engine',
  description: 'Resident diffusion engine and job queue',
};

// System fonts only: next/font/google downloads at build time, and builds here are offline.
export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body className="flex min-h-screen flex-col md:flex-row">
        <Sidebar />
        <main className="min-w-0 flex-1 p-3 md:p-5">
          <AuthGate>{children}</AuthGate>
        </main>
      </body>
    </html>
  );
}
