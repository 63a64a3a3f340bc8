import JobPageClient from './JobPageClient';

export const dynamic = 'force-dynamic';

export default async function JobPage({ params }: { params: Promise<{ jobID: string }> }) {
  const { jobID } = await params;
  return <JobPageClient jobId={jobID} />;
}
