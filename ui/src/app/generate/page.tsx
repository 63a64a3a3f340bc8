import GenerateClient from './GenerateClient';

export const dynamic = 'force-dynamic';

/** `/generate?job=<engine job id>` preselects that engine (the job page links here). */
export default async function GeneratePage({ searchParams }: { searchParams: Promise<{ job?: string }> }) {
  const { job } = await searchParams;
  return <GenerateClient initialJobId={job ?? null} />;
}
