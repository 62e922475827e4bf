// LogsRepo on SQLite and PostgreSQL: records read back as written, newest first and paged; every kind of query
// condition (time in seconds, levels, wildcards, message parts, must/should/not, absent fields) is answered by the
// database; an export reads in batches without gaps or repeats; counts per time span (the chart) in one query; retention
// by age and rows.
import assert from "node:assert/strict";
import { LogsRepo } from "../../lib/db/logs";
import { parseLogQuery } from "../../lib/logs/query";
import { LogBook } from "../../lib/logs/book";
import type { LogRecord } from "../../lib/logs/model";
import { onEveryBackend } from "../helpers/db";

onEveryBackend("LogsRepo", (h) => {
	let repo: LogsRepo;
	const T = 1_700_000_000_000;
	let seq = 0;
	const rec = (p: Partial<LogRecord> & { ts: number }): LogRecord => ({ id: `${String(p.ts).padStart(13, "0")}-${String(++seq).padStart(6, "0")}`, kind: "sys", level: "info", logger: "tree", node: "n1", msg: "hello", ...p });
	const ids = (rs: LogRecord[]) => rs.map((r) => r.msg);
	const q = (kind: "sys" | "audit", query: string, offset = 0, limit = 100) => repo.list(kind, parseLogQuery(query), offset, limit);

	beforeEach(async () => {
		repo = new LogsRepo(h().db);
		await h().db.kysely.deleteFrom("logs").execute();
		await repo.add([
			rec({ ts: T, msg: "disk is full", level: "error", logger: "tree", node: "node-a" }),
			rec({ ts: T + 1500, msg: "User admin logged in", level: "info", logger: "auth", node: "node-b", userName: "admin", remoteAddress: "10.0.0.1" }),
			rec({ ts: T + 2000, msg: "100% done_ok", level: "warn", logger: "jobs", node: "node-a", extra: { job: "j1" } }),
			rec({ ts: T + 3000, msg: "Login failed", kind: "audit", msgId: "login.failed", userName: "bob", remoteAddress: "10.0.0.9" }),
		]);
	});

	it("reads records back as written, newest first, in pages", async () => {
		const all = await q("sys", "");
		assert.deepEqual(ids(all), ["100% done_ok", "User admin logged in", "disk is full"]);
		assert.deepEqual(all[0].extra, { job: "j1" });
		assert.equal(all[1].userName, "admin");
		assert.equal(all[1].remoteAddress, "10.0.0.1");
		assert.equal(all[0].userName, undefined);
		assert.deepEqual(ids(await q("sys", "", 1, 1)), ["User admin logged in"]);
		assert.deepEqual(ids(await q("audit", "")), ["Login failed"]);
	});

	it("filters by level, logger, node and wildcards, case-insensitively", async () => {
		assert.deepEqual(ids(await q("sys", "+Level:ERROR")), ["disk is full"]);
		assert.deepEqual(ids(await q("sys", "+Node:node-a")), ["100% done_ok", "disk is full"]);
		assert.deepEqual(ids(await q("sys", "+Logger:au*")), ["User admin logged in"]);
		assert.deepEqual(ids(await q("sys", "+Logger:j?bs")), ["100% done_ok"]);
		assert.deepEqual(ids(await q("audit", "+MsgId:login.failed +RemoteAddress:10.0.0.9")), ["Login failed"]);
	});

	it("finds a part of the message; %, _ and \\ are literal", async () => {
		assert.deepEqual(ids(await q("sys", "FULL")), ["disk is full"]);
		assert.deepEqual(ids(await q("sys", '+Msg:"logged in"')), ["User admin logged in"]);
		assert.deepEqual(ids(await q("sys", "+Msg:log*")), ["User admin logged in"]);
		assert.deepEqual(ids(await q("sys", "+Msg:100%")), ["100% done_ok"]);
		assert.deepEqual(ids(await q("sys", "+Msg:e_o")), ["100% done_ok"]);
		assert.deepEqual(ids(await q("sys", "+Msg:0%d")), []);
	});

	it("compares Ts in unix seconds, at the second's edges", async () => {
		const s = T / 1000;
		assert.deepEqual(ids(await q("sys", `+Ts:>${s}`)), ["100% done_ok", "User admin logged in"]);
		assert.deepEqual(ids(await q("sys", `+Ts:>=${s + 1} +Ts:<${s + 2}`)), ["User admin logged in"]);
		assert.deepEqual(ids(await q("sys", `+Ts:<=${s + 1}`)), ["User admin logged in", "disk is full"]);
		assert.deepEqual(ids(await q("sys", `+Ts:${s + 2}`)), ["100% done_ok"]);
	});

	it("combines must, should and not; a not keeps the records without the field", async () => {
		assert.deepEqual(ids(await q("sys", "Level:error Level:warn")), ["100% done_ok", "disk is full"]);
		assert.deepEqual(ids(await q("sys", "+Node:node-a Level:info")), ["100% done_ok", "disk is full"]);
		assert.deepEqual(ids(await q("sys", "-Level:error")), ["100% done_ok", "User admin logged in"]);
		assert.deepEqual(ids(await q("sys", "-UserName:admin")), ["100% done_ok", "disk is full"]);
	});

	it("reads everything in batches after a cursor, without gaps or repeats (same millisecond included)", async () => {
		await repo.add(Array.from({ length: 25 }, (_, i) => rec({ ts: T + 10_000, msg: `same-${i}` })));
		const seen: string[] = [];
		let cursor;
		for (;;) {
			const batch = await repo.after("sys", parseLogQuery(""), cursor, 7);
			if (!batch.length) break;
			seen.push(...batch.map((r) => r.id));
			cursor = { ts: batch[batch.length - 1].ts, id: batch[batch.length - 1].id };
		}
		assert.equal(seen.length, 28);
		assert.equal(new Set(seen).size, 28);
	});

	it("stores a record once when asked to: a second add of its id is skipped, not an error", async () => {
		const r = rec({ ts: T + 5000, kind: "audit", msg: "shared", id: "audit-once-1" } as LogRecord);
		await repo.add([r], true);
		await repo.add([{ ...r, msg: "shared again" }], true);
		assert.deepEqual(ids(await q("audit", "+Msg:shared")), ["shared"]);
		await assert.rejects(repo.add([r]), (e: { code?: number }) => e.code === 409);
	});

	it("LogBook's retention: system entries by age and by rows, audit entries by age", async () => {
		const DAY = 24 * 3600_000;
		const book = new LogBook(repo, { now: () => T + 10 * DAY });
		await repo.add([rec({ ts: T + 9 * DAY, msg: "recent-1" }), rec({ ts: T + 9 * DAY + 1, msg: "recent-2" }), rec({ ts: T + 9 * DAY, kind: "audit", msg: "recent audit" })]);
		// Older than 7 days: the 3 system entries of T go; then the newest 1 of the 2 left is kept.
		assert.deepEqual(await book.prune({ sysDays: 7, sysMaxRows: 1, auditDays: 365 }), { sys: 4, audit: 0 });
		assert.deepEqual(ids(await q("sys", "")), ["recent-2"]);
		assert.deepEqual(await book.prune({ sysDays: 0, sysMaxRows: 0, auditDays: 5 }), { sys: 0, audit: 1 });
		assert.deepEqual(ids(await q("audit", "")), ["recent audit"]);
	});

	it("counts per span in one grouped query: equal spans, calendar months, event id, empty spans as 0", async () => {
		// Equal spans of 1 s: the division; each edge belongs to the span it starts.
		assert.deepEqual(await repo.countSpans("sys", undefined, [T, T + 1000, T + 2000, T + 3000, T + 4000]), [1, 1, 1, 0]);
		assert.deepEqual(await repo.countSpans("audit", "login.failed", [T, T + 2000, T + 4000]), [0, 1]);
		assert.deepEqual(await repo.countSpans("audit", "login.succeeded", [T, T + 4000]), [0]);
		// Uneven spans (as months are): the CASE over the edges.
		assert.deepEqual(await repo.countSpans("sys", undefined, [T - 5000, T + 1, T + 1500, T + 1501, T + 9000]), [1, 0, 1, 1]);
		assert.deepEqual(await repo.countSpans("sys", undefined, [T]), []);
	});

	it("charts a year of audit events by calendar month and a day by hour, on the database", async () => {
		const at = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m, d, h);
		const audit = (ts: number, msgId = "login.failed") => rec({ ts, kind: "audit", msgId, msg: "audit" });
		await repo.add([
			audit(at(2025, 1, 1)), audit(at(2025, 1, 28, 23)), audit(at(2025, 2, 1)), audit(at(2025, 2, 1), "login.succeeded"),
			audit(at(2025, 5, 10, 12)), audit(at(2025, 5, 10, 12) + 59 * 60_000), audit(at(2025, 5, 10, 14)), audit(at(2024, 6, 1) - 1),
		]);
		const book = new LogBook(repo, { now: () => at(2026, 0, 1) });
		const year = await book.chart({ TimeRangeType: "Y", MsgId: "login.failed", RefTime: at(2025, 5, 10) / 1000 });
		assert.deepEqual(year.Results.map((r) => `${r.Name}:${r.Count}`), ["2024-07:0", "2024-08:0", "2024-09:0", "2024-10:0", "2024-11:0", "2024-12:0", "2025-01:0", "2025-02:2", "2025-03:1", "2025-04:0", "2025-05:0", "2025-06:3"]);
		const day = await book.chart({ TimeRangeType: "D", RefTime: at(2025, 5, 10, 14) / 1000 });
		assert.deepEqual(day.Results.slice(-3).map((r) => `${r.Name}:${r.Count}`), ["12:00:2", "13:00:0", "14:00:1"]);
		assert.equal(day.Results.reduce((n, r) => n + r.Count, 0), 3);
	});

	it("prunes by age and keeps at most a number of rows, per kind", async () => {
		assert.equal(await repo.pruneOlder("sys", T + 1000), 1);
		assert.deepEqual(ids(await q("sys", "")), ["100% done_ok", "User admin logged in"]);
		assert.equal(await repo.pruneBeyond("sys", 1), 1);
		assert.deepEqual(ids(await q("sys", "")), ["100% done_ok"]);
		assert.equal(await repo.pruneBeyond("sys", 5), 0);
		assert.deepEqual(ids(await q("audit", "")), ["Login failed"]);
	});
});
