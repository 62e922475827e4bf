// The install record: DATA_DIR/install.json, written once the first-run set-up has succeeded. Its presence
// is what makes a node "installed": set-up is not repeated and POST /install is refused.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ensureDir, writeFileAtomic } from "../config";

export interface InstallEvent {
	Step: string;
	/** 0 to 100. */
	Progress: number;
	Message: string;
	/** Unix seconds. */
	Timestamp: number;
	Success: boolean;
}

export interface InstallRecord {
	installedAt: string;
	version: string;
	adminLogin: string;
	/** NODE_ID of the node that performed the set-up. */
	nodeID?: string;
	events: InstallEvent[];
}

export const RECORD_FILE = "install.json";

export function recordPath(dataDir: string): string {
	return join(dataDir, RECORD_FILE);
}

/** The record, `null` when there is none. A file that cannot be parsed is reported, not silently ignored. */
export function readRecord(dataDir: string): { record: InstallRecord | null; error?: string } {
	const file = recordPath(dataDir);
	if (!existsSync(file)) return { record: null };
	try {
		const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<InstallRecord>;
		if (!parsed || typeof parsed.installedAt !== "string" || typeof parsed.adminLogin !== "string") {
			return { record: null, error: `${file} is not a Cellar install record` };
		}
		return { record: { version: "", events: [], ...parsed } as InstallRecord };
	} catch (err) {
		return { record: null, error: `${file} cannot be read: ${(err as Error).message}` };
	}
}

export function writeRecord(dataDir: string, record: InstallRecord): void {
	ensureDir(dataDir);
	writeFileAtomic(recordPath(dataDir), JSON.stringify(record, null, 2) + "\n", 0o644);
}
