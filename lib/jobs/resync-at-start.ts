// The resync of structured datasources when a node starts (see resyncOnRestart): their storage may have changed
// while no node watched it. Nodes of a cluster starting together resync once: the holder of a lease in the
// database queues the jobs (null lease: one SQLite node, alone). The jobs are ordinary resync jobs, queued as
// the system user, so that a datasource already resyncing is not resynced twice (lib/jobs/user-jobs).
import { resyncOnRestart } from "./model";

export interface ResyncAtStartDeps {
	/** True once the datasources and tree services answer; false after a while without them. */
	servicesUp(): Promise<boolean>;
	/** The node is stopping: give up quietly. */
	stopping(): boolean;
	datasources(): Promise<Parameters<typeof resyncOnRestart>[0]>;
	/** Queues the resync job of a datasource. */
	queue(dsName: string): Promise<unknown>;
	lease: { run(work: () => Promise<void>): Promise<{ ran: boolean }> } | null;
	warn(message: string): void;
	/** Unix seconds: datasources created after the start are new, nothing to resync. */
	now(): number;
}

/** Queues the resyncs (waiting as long as the services take to come up); whether this node did. */
export async function resyncAtStart(deps: ResyncAtStartDeps): Promise<boolean> {
	try {
		const startedAt = deps.now();
		// A tree of a million nodes takes over a minute to load: wait as long as it takes.
		while (!(await deps.servicesUp())) if (deps.stopping()) return false;
		const queue = async () => {
			for (const dsName of resyncOnRestart(await deps.datasources(), startedAt)) await deps.queue(dsName);
		};
		if (!deps.lease) {
			await queue();
			return true;
		}
		return (await deps.lease.run(queue)).ran;
	} catch (e) {
		if (!deps.stopping()) deps.warn(`Resync of structured datasources at start: ${(e as Error).message}`);
		return false;
	}
}
