// Activity digests by mail: every ACTIVITY_DIGEST_HOURS, one node of the cluster (a lease) mails each user who has
// unread inbox activities not yet in a digest, and an email address, the `Digest` template with those activities
// as text (the AsDigest stream: grouped by workspace or cell), then moves their `lastsent` marker to the newest
// activity mailed, so the next digest starts after it. Nothing is mailed to a user without an email.
import type { Identity } from "../auth/identity";
import type { ActivityObject } from "./model";

export interface DigestDeps {
	/** Users with unread activities newer than their last digest (ActivityRepo.digestOwners). */
	owners(): Promise<{ userId: string; newest: string }[]>;
	/** The user's identity, null when gone or locked. */
	identityOf(login: string): Promise<Identity | null>;
	/** Whether the account has an email address. */
	hasEmail(login: string): Promise<boolean>;
	pending(user: Identity): Promise<{ digest: ActivityObject; upTo?: string }>;
	/** Queues the mail (mailer.queue); resolves once it is persisted. */
	queue(login: string, text: string, count: number): Promise<void>;
	markSent(login: string, seq: string): Promise<void>;
}

/** `[label](scheme://…)` links of activity summaries, as plain words. */
function plain(summary: string | undefined): string {
	return (summary ?? "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").trim();
}

/** The digest as the mail's text: a heading per workspace or cell, a line per activity. */
export function digestText(digest: ActivityObject): { text: string; count: number } {
	const lines: string[] = [];
	let count = 0;
	for (const item of digest.items ?? []) {
		if (item.items) {
			lines.push("", `${item.type === "Cell" ? "Cell" : "Workspace"} ${item.name ?? ""}:`);
			for (const a of item.items) {
				lines.push(`- ${plain(a.summary) || `${a.type} ${a.object?.name ?? ""}`}`);
				count++;
			}
		} else {
			lines.push(`- ${plain(item.summary) || item.type}`);
			count++;
		}
	}
	return { text: lines.join("\n").trim(), count };
}

/** One digest run: how many users were mailed. A user's failure is logged and leaves their marker unmoved. */
export async function sendDigests(deps: DigestDeps, warn: (m: string) => void): Promise<number> {
	let mailed = 0;
	for (const { userId } of await deps.owners()) {
		try {
			if (!(await deps.hasEmail(userId))) continue;
			const user = await deps.identityOf(userId);
			if (!user) continue;
			const { digest, upTo } = await deps.pending(user);
			if (!upTo) continue;
			const { text, count } = digestText(digest);
			// Activities on nodes the user no longer sees make an empty digest: covered, not mailed.
			if (count) {
				await deps.queue(userId, text, count);
				mailed++;
			}
			await deps.markSent(userId, upTo);
		} catch (e) {
			warn(`Activity digest for ${userId} failed: ${(e as Error).message}`);
		}
	}
	return mailed;
}
