// Opening a database: SQLite's settings, migrations (once, also when nodes start together), the one error
// translation on both backends, transactions, and SQLite's durability across a killed process.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs, { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { ConflictError } from "../../lib/errors";
import { migrations } from "../../lib/db/migrations";
import { appliedMigrations, isPostgresUrl, migrate, openDatabase, openOptionsFromEnv, translateError, type Db } from "../../lib/db";
import { UNIQUE_KEYS } from "../../lib/db/errors";
import { prefixEnd } from "../../lib/db/sql";
import { onEveryBackend } from "../helpers/db";

const TABLES = ["acls", "activities", "activity_markers", "activity_subscriptions", "config_entries", "datasources", "directories", "encryption_keys", "frontend_binaries", "ip_lists", "ip_states", "jobs", "leases", "logs", "mail_queue", "markers", "meta_templates", "node_template_entries", "node_templates", "nodes", "oauth2_clients", "oauth2_connectors", "policy_groups", "reset_keys", "roles", "scheduler_job_versions", "scheduler_jobs", "scheduler_templates", "search_names", "search_text", "selections", "sessions", "share_links", "task_logs", "tasks", "tokens", "user_meta", "user_meta_namespaces", "user_meta_tags", "user_totp", "users", "versioning_policies", "versions", "virtual_nodes", "workspaces"];

describe("lib/db error translation", () => {
	it("turns a unique violation of either backend into ConflictError, named for the key when known", () => {
		const pg = translateError({ code: "23505", constraint: "users_login_key", table: "users", message: 'duplicate key value violates unique constraint "users_login_key"' });
		assert.ok(pg instanceof ConflictError);
		assert.equal(pg.code, 409);
		assert.equal(pg.type, "user.exists");
		const lite = translateError({ code: "SQLITE_CONSTRAINT_UNIQUE", message: "UNIQUE constraint failed: workspaces.slug" });
		assert.ok(lite instanceof ConflictError);
		assert.equal(lite.type, "workspace.exists");
		const pk = translateError({ code: "SQLITE_CONSTRAINT_PRIMARYKEY", message: "UNIQUE constraint failed: markers.name" });
		assert.ok(pk instanceof ConflictError);
		assert.equal(pk.type, "conflict");
		assert.match(pk.message, /markers/);
	});

	it("passes every other error through as it is", () => {
		for (const e of [new Error("boom"), { code: "23503" }, { code: "SQLITE_CONSTRAINT_FOREIGNKEY" }, { code: "40P01" }, null, "text"]) assert.equal(translateError(e), e);
	});

	it("computes the end of a prefix range in code points", () => {
		assert.equal(prefixEnd("/a/"), "/a0");
		assert.equal(prefixEnd("ab"), "ac");
		assert.equal(prefixEnd(""), undefined);
		assert.equal(prefixEnd("a\u{10ffff}"), "b");
		assert.equal(prefixEnd("\ud7ff"), "\ue000");
	});

	it("reads the backend from DATABASE_URL", () => {
		assert.deepEqual(openOptionsFromEnv({ DATA_DIR: "/x" }), { databaseUrl: undefined, dataDir: "/x" });
		assert.equal(openOptionsFromEnv({ DATABASE_URL: "postgres://h/db" }).databaseUrl, "postgres://h/db");
		assert.ok(isPostgresUrl("postgresql://u@h:5432/db"));
		assert.ok(!isPostgresUrl("mysql://h/db"));
	});

	it("refuses a DATABASE_URL that is not PostgreSQL's", async () => {
		await assert.rejects(openDatabase({ databaseUrl: "mysql://localhost/cellar" }), /postgres/);
	});
});

onEveryBackend("lib/db opening", (h) => {
	it("creates every table and records the migration once", async () => {
		// SQLite's FTS5 tables (and their shadow tables) of the search index are not tables of the schema.
		const tables = (await h().db.kysely.introspection.getTables())
			.map((t) => t.name)
			.filter((t) => !/_fts(_[a-z]+)?$/.test(t))
			.sort();
		assert.deepEqual(tables, TABLES);
		assert.deepEqual(await appliedMigrations(h().db), Object.keys(migrations(h().db.dialect)));
		assert.deepEqual(await migrate(h().db), [], "nothing left to apply");
	});

	it("migrates a new database once when several nodes open it at the same time", async () => {
		const options = await h().fresh();
		const handles = await Promise.all(Array.from({ length: h().name === "postgres" ? 3 : 1 }, () => openDatabase(options)));
		try {
			for (const d of handles) assert.deepEqual(await appliedMigrations(d), Object.keys(migrations(d.dialect)));
		} finally {
			for (const d of handles) await d.close();
		}
	});

	it("names every unique key the translator knows as the backend reports it", async () => {
		const db = h().db;
		if (db.dialect === "postgres") {
			const rows = await sql<{ indexname: string }>`select indexname from pg_indexes where schemaname = 'public'`.execute(db.kysely);
			const names = new Set(rows.rows.map((r) => r.indexname));
			for (const k of UNIQUE_KEYS) assert.ok(names.has(k.pg), `index ${k.pg} missing`);
		} else {
			const signatures = new Set<string>();
			for (const table of TABLES) {
				const list = await sql<{ name: string; unique: number }>`select name, "unique" from pragma_index_list(${table})`.execute(db.kysely);
				for (const ix of list.rows.filter((r) => r.unique)) {
					const cols = await sql<{ name: string }>`select name from pragma_index_info(${ix.name}) order by seqno`.execute(db.kysely);
					signatures.add(cols.rows.map((c) => `${table}.${c.name}`).join(", "));
				}
			}
			for (const k of UNIQUE_KEYS) assert.ok(signatures.has(k.sqlite), `unique key ${k.sqlite} missing`);
		}
	});

	it("keeps no index on share_links.owner_uuid (no query reads links by owner)", async () => {
		const db = h().db;
		const names =
			db.dialect === "postgres"
				? (await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = 'public' and tablename = 'share_links'`.execute(db.kysely)).rows
				: (await sql<{ name: string }>`select name from pragma_index_list('share_links')`.execute(db.kysely)).rows;
		assert.ok(names.length > 0, "the table's other indexes are listed");
		assert.ok(!names.some((r) => r.name === "share_links_owner"), names.map((r) => r.name).join(", "));
	});

	it("translates a real duplicate into ConflictError; other constraint errors keep their driver code", async () => {
		const k = h().db.kysely;
		const ws = { uuid: "w1", slug: "common", label: "Common", description: "", scope: "ADMIN", last_updated: 0, policies: "[]", policies_context_editable: 0 as const, attributes: "{}" };
		await k.insertInto("workspaces").values(ws).execute();
		await assert.rejects(k.insertInto("workspaces").values({ ...ws, uuid: "w2" }).execute(), (err: unknown) => err instanceof ConflictError && err.type === "workspace.exists");
		await assert.rejects(k.insertInto("workspaces").values(ws).execute(), (err: unknown) => err instanceof ConflictError && err.type === "workspace.exists");
		const acl = { id: "a1", role_id: "r", workspace_id: "w1", node_id: "", action_name: "read", action_value: "1", created: 1 };
		await k.insertInto("acls").values(acl).execute();
		await assert.rejects(k.insertInto("acls").values({ ...acl, id: "a2", action_value: "0" }).execute(), (err: unknown) => err instanceof ConflictError && err.type === "acl.exists");
		await assert.rejects(
			sql`insert into workspaces (uuid, slug, label) values ('w3', 'x', 'X')`.execute(k),
			(err: unknown) => !(err instanceof ConflictError) && ["23502", "SQLITE_CONSTRAINT_NOTNULL"].includes((err as { code?: string }).code ?? ""),
		);
	});

	it("runs a transaction whole or not at all, and again when the database aborted it as a deadlock", async () => {
		const db: Db = h().db;
		await assert.rejects(
			db.transaction(async (trx) => {
				await trx.insertInto("markers").values({ name: "half", value: "1" }).execute();
				throw new Error("stop");
			}),
			/stop/,
		);
		assert.equal(await db.kysely.selectFrom("markers").select("name").where("name", "=", "half").executeTakeFirst(), undefined);
		let runs = 0;
		const out = await db.transaction(async (trx) => {
			runs++;
			await trx.insertInto("markers").values({ name: `try-${runs}`, value: "1" }).execute();
			if (runs < 3) throw Object.assign(new Error("deadlock detected"), { code: "40P01" });
			return "done";
		});
		assert.equal(out, "done");
		assert.equal(runs, 3);
		const names = (await db.kysely.selectFrom("markers").select("name").where("name", "like", "try-%").execute()).map((r) => r.name);
		assert.deepEqual(names, ["try-3"], "the aborted attempts left nothing");
	});

	it("SQLite: WAL, synchronous=NORMAL (the driver syncs the log itself), foreign keys, busy timeout, in DATA_DIR/cellar.db", async function () {
		const db = h().db;
		if (db.dialect !== "sqlite") return this.skip();
		const one = async (pragma: string) => Object.values((await sql.raw<Record<string, unknown>>(`pragma ${pragma}`).execute(db.kysely)).rows[0] ?? {})[0];
		assert.equal(await one("journal_mode"), "wal");
		assert.equal(await one("synchronous"), 1, "NORMAL");
		assert.equal(await one("foreign_keys"), 1);
		assert.equal(await one("busy_timeout"), 5000);
		assert.ok(db.location.endsWith("cellar.db") && existsSync(db.location));
	});
});

/** Frames in the SQLite log of DATA_DIR's database (each a page written by a commit). */
function walFrames(dir: string): number {
	const size = fs.statSync(join(dir, "cellar.db-wal")).size;
	return size <= 32 ? 0 : Math.floor((size - 32) / (4096 + 24));
}

describe("lib/db SQLite durability", function () {
	this.timeout(60_000);

	it("answers a write only after an fdatasync of the log that started after it, one sync for many concurrent writes", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-group-"));
		const real = fs.fdatasync;
		const db = await openDatabase({ dataDir: dir });
		try {
			await db.kysely.insertInto("markers").values({ name: "first", value: "1" }).execute();
			let started = 0;
			let finished = 0;
			// A slow disk: each sync takes 100 ms, so the writes below all arrive while one runs.
			(fs as { fdatasync: typeof fs.fdatasync }).fdatasync = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
				started++;
				setTimeout(() => real(fd, (err) => (finished++, cb(err))), 100);
			}) as typeof fs.fdatasync;
			const acked: number[] = [];
			const writes = Array.from({ length: 20 }, (_, i) =>
				db.transaction(async (trx) => {
					await trx.insertInto("markers").values({ name: `w-${i}`, value: "1" }).execute();
				}).then(() => acked.push(finished)),
			);
			const single = db.kysely.insertInto("markers").values({ name: "autocommit", value: "1" }).execute().then(() => acked.push(finished));
			await Promise.all([...writes, single]);
			assert.ok(acked.every((f) => f >= 1), "no write answered before a sync of the log finished");
			assert.ok(started <= 2, `${started} syncs for 21 concurrent commits`);
			// The writers did not wait for each other's syncs to commit: all of them committed during the first.
			const count = await db.kysely.selectFrom("markers").select((e) => e.fn.countAll<number>().as("n")).where("name", "like", "w-%").executeTakeFirstOrThrow();
			assert.equal(Number(count.n), 20);
		} finally {
			(fs as { fdatasync: typeof fs.fdatasync }).fdatasync = real;
			await db.close();
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("does not acknowledge the writes whose log sync failed (those its commit held), and answers the later ones", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-group-"));
		const real = fs.fdatasync;
		const db = await openDatabase({ dataDir: dir });
		try {
			await db.kysely.insertInto("markers").values({ name: "first", value: "1" }).execute();
			let fail = true;
			(fs as { fdatasync: typeof fs.fdatasync }).fdatasync = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
				if (!fail) return real(fd, cb);
				fail = false;
				setTimeout(() => cb(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" })), 50);
			}) as typeof fs.fdatasync;
			// Both end in the same turn of the event loop: one commit holds them, and its sync fails.
			const failed = db.transaction(async (trx) => {
				await trx.insertInto("markers").values({ name: "unsynced", value: "1" }).execute();
			});
			const alsoFailed = db.kysely.insertInto("markers").values({ name: "unsynced-2", value: "1" }).execute();
			await assert.rejects(failed, /EIO/);
			await assert.rejects(alsoFailed, /EIO/);
			await db.transaction(async (trx) => {
				await trx.insertInto("markers").values({ name: "other", value: "1" }).execute();
				await new Promise((r) => setTimeout(r, 20)); // a transaction spanning turns of the event loop
				await trx.insertInto("markers").values({ name: "other-2", value: "1" }).execute();
			});
			const names = (await db.kysely.selectFrom("markers").select("name").where("name", "like", "other%").execute()).map((r) => r.name).sort();
			assert.deepEqual(names, ["other", "other-2"]);
		} finally {
			(fs as { fdatasync: typeof fs.fdatasync }).fdatasync = real;
			await db.close();
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("commits the transactions that end together at once, a failed one rolled back alone", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-group-"));
		const db = await openDatabase({ dataDir: dir });
		try {
			await db.kysely.insertInto("markers").values({ name: "taken", value: "0" }).execute();
			const before = walFrames(dir);
			const outcomes = await Promise.allSettled(
				Array.from({ length: 30 }, (_, i) =>
					db.transaction(async (trx) => {
						await trx.insertInto("markers").values({ name: `g-${i}`, value: "1" }).execute();
						// Every third one fails after its first write: that write goes, the others' stay.
						if (i % 3 === 0) await trx.insertInto("markers").values({ name: "taken", value: "1" }).execute();
						await trx.updateTable("markers").set({ value: String(i) }).where("name", "=", `g-${i}`).execute();
					}),
				),
			);
			assert.deepEqual(outcomes.map((o) => o.status), Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? "rejected" : "fulfilled")));
			const rows = await db.kysely.selectFrom("markers").select(["name", "value"]).where("name", "like", "g-%").execute();
			assert.deepEqual(rows.map((r) => r.name).sort(), Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3).map((i) => `g-${i}`).sort());
			for (const r of rows) assert.equal(r.value, r.name.slice(2));
			// 20 transactions that each changed the same table page: the log grew by a few commits' pages, not 20.
			const frames = walFrames(dir) - before;
			assert.ok(frames < 20, `${frames} log frames for 20 transactions`);
			// A plain write after them runs on its own, and is answered.
			await db.kysely.insertInto("markers").values({ name: "after", value: "1" }).execute();
			assert.equal((await db.kysely.selectFrom("markers").select("value").where("name", "=", "after").executeTakeFirst())?.value, "1");
		} finally {
			await db.close();
			rmSync(dir, { recursive: true, force: true });
		}
	});

	it("keeps every acknowledged write when the process is killed (SIGKILL) in the middle of writing", async () => {
		const dir = mkdtempSync(join(tmpdir(), "cellar-crash-"));
		try {
			const child = spawn(process.execPath, ["--import", "tsx", join(__dirname, "../helpers/db-crash-writer.ts")], {
				env: { ...process.env, DATA_DIR: dir, WRITES: "400", KILL_AT: "300" },
				stdio: ["ignore", "pipe", "inherit"],
			});
			let out = "";
			child.stdout.on("data", (d: Buffer) => (out += d.toString()));
			const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, sig) => resolve(sig)));
			assert.equal(signal, "SIGKILL");
			const acked = out.split("\n").filter(Boolean);
			assert.ok(acked.length >= 250, `${acked.length} writes acknowledged before the kill`);
			const db = await openDatabase({ dataDir: dir });
			try {
				const stored = new Set((await db.kysely.selectFrom("leases").select("name").execute()).map((r) => r.name));
				for (const name of acked) assert.ok(stored.has(name), `${name} was acknowledged but is lost`);
				const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db.kysely);
				assert.equal(check.rows[0]?.integrity_check, "ok");
			} finally {
				await db.close();
			}
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});
