import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  // better-sqlite3 is a native module: keep it out of the bundle (it is in Next's built-in list too).
  serverExternalPackages: ['better-sqlite3'],
  devIndicators: false,
  experimental: {
    // proxy.ts (the auth check) clones every request body it matches and cuts it at 10 MB by default.
    // /api/inference is outside its matcher (it checks the token itself and streams bodies untouched);
    // this only raises the cap for the other /api routes.
    proxyClientMaxBodySize: '1gb',
  },
};

export default nextConfig;
