// SearchRepo (lib/db/search.ts) on SQLite and PostgreSQL: folded names and texts derived from the nodes table,
// what a start's catch-up finds stale, the one-reader claim, and the reads a search makes.
import assert from "node:assert/strict";
import { NodesRepo, type Db } from "../../lib/db";
import { SearchRepo, type RowQuery, type SearchRow } from "../../lib/db/search";
import { countingStatements, onEveryBackend } from "../helpers/db";

const entry = (uuid: string, name: string, folded = name.toLowerCase()) => ({ uuid, name, folded, ext: folded.includes(".") ? folded.slice(folded.lastIndexOf(".") + 1) : folded });

async function all(repo: SearchRepo, q: Partial<RowQuery>, pageSize = 1000): Promise<SearchRow[]> {
	const out: SearchRow[] = [];
	for await (const page of repo.rows({ scopes: [{ ds: "ds1", prefix: "" }], filter: {}, candidates: { kind: "scopes" }, ...q }, pageSize)) {
		assert.ok(page.length <= pageSize);
		out.push(...page);
	}
	return out;
}
const pathsOf = (rows: SearchRow[]) => rows.map((r) => r.path).sort();

onEveryBackend("lib/db SearchRepo", (h) => {
	let db: Db;
	let nodes: NodesRepo;
	let repo: SearchRepo;
	const uuid: Record<string, string> = {};

	before(async () => {
		db = h().db;
		nodes = new NodesRepo(db);
		repo = new SearchRepo(db);
		await nodes.ensureRoot("ds1");
		for (const [path, type, size, meta] of [
			["docs", "COLLECTION", 0, {}],
			["docs/Annual Report.pdf", "LEAF", 5000, {}],
			["docs/notes.txt", "LEAF", 30, {}],
			["docs/100%_done.md", "LEAF", 10, {}],
			["docs/README", "LEAF", 10, { mime: JSON.stringify("text/plain") }],
			["docs/big.txt", "LEAF", 5_000_000, {}],
			["other", "COLLECTION", 0, {}],
			["other/report-b.pdf", "LEAF", 1, {}],
		] as const) {
			uuid[path] = (await nodes.insert({ ds: "ds1", path, type, size, etag: `etag-${path}`, meta: { ...meta } })).uuid;
		}
	});

	it("writes the names of the nodes that exist, finds the stale ones a window at a time, and cascades deletes", async () => {
		const pages: number[] = [];
		const stale: string[] = [];
		for await (const page of repo.staleNames(3)) {
			pages.push(page.length);
			stale.push(...page.map((r) => r.name));
		}
		assert.equal(stale.length, 9, "every node (the root included) is new");
		assert.ok(pages.every((n) => n <= 3));
		await repo.upsertNames([...(await db.kysely.selectFrom("nodes").select(["uuid", "name"]).execute()).map((r) => entry(r.uuid, r.name)), entry("no-such-node", "ghost.txt")]);
		assert.equal((await repo.counts()).names, 9, "a name without its node is not written");
		for await (const page of repo.staleNames(3)) assert.deepEqual(page, [], "nothing stale after the write");
		// A rename the index missed.
		await nodes.moveSubtree("ds1", "other/report-b.pdf", "ds1", "other/Rapport-B.pdf");
		const renamed: string[] = [];
		for await (const page of repo.staleNames()) renamed.push(...page.map((r) => r.name));
		assert.deepEqual(renamed, ["Rapport-B.pdf"]);
		await repo.upsertNames([entry(uuid["other/report-b.pdf"], "Rapport-B.pdf")]);
		// Writing the same names again is harmless (replicas do).
		await repo.upsertNames([entry(uuid["other/report-b.pdf"], "Rapport-B.pdf")]);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "name", literal: "rapport" } })), ["other/Rapport-B.pdf"]);
	});

	it("finds names by substring through the trigram index, literally (%, _ and quotes are not patterns)", async () => {
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "name", literal: "report" } })), ["docs/Annual Report.pdf"]);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "name", literal: "0%_d" } })), ["docs/100%_done.md"]);
		assert.deepEqual(await all(repo, { candidates: { kind: "name", literal: '0"_' } }), []);
		assert.deepEqual(await all(repo, { candidates: { kind: "name", literal: "x_d" } }), []);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "name", literal: ".pdf" } }, 1)), ["docs/Annual Report.pdf", "other/Rapport-B.pdf"], "paged one row at a time");
	});

	it("claims a file's text for one reader per etag, stores its words, and finds them", async () => {
		const id = uuid["docs/notes.txt"];
		assert.deepEqual(await repo.claimTexts([{ uuid: id, etag: "etag-docs/notes.txt" }]), [id]);
		assert.deepEqual(await repo.claimTexts([{ uuid: id, etag: "etag-docs/notes.txt" }]), [], "claimed by someone else");
		assert.equal(await repo.setTexts([{ uuid: id, etag: "stale-etag", words: ["nope"] }]), 0, "words for another etag are ignored");
		assert.equal(await repo.setTexts([{ uuid: id, etag: "etag-docs/notes.txt", words: ["call", "the", "plumber", "42"] }]), 1);
		assert.deepEqual(await repo.claimTexts([{ uuid: id, etag: "etag-docs/notes.txt" }]), [], "read already");
		assert.deepEqual(await repo.claimTexts([{ uuid: "no-such-node", etag: "x" }]), []);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "words", words: ["plumber", "call"] } })), ["docs/notes.txt"]);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "words", words: ["plumb*"] } })), ["docs/notes.txt"]);
		assert.deepEqual(await all(repo, { candidates: { kind: "words", words: ["plumber", "cat"] } }), []);
		const flagged = await all(repo, { hits: { words: ["plumber"], either: ["nothing"] } });
		assert.deepEqual(
			flagged.filter((r) => Number(r.words_hit) === 1).map((r) => r.path),
			["docs/notes.txt"],
		);
		assert.ok(flagged.every((r) => Number(r.either_hit) === 0));
		// New content: a new claim, the old words go.
		assert.deepEqual(await repo.claimTexts([{ uuid: id, etag: "etag-2" }]), [id]);
		assert.deepEqual(await all(repo, { candidates: { kind: "words", words: ["plumber"] } }), []);
		assert.equal(await repo.setTexts([{ uuid: id, etag: "etag-2", words: ["leak"] }]), 1);
		assert.equal((await all(repo, { candidates: { kind: "words", words: ["leak"] } })).length, 1);
		// A claim whose reader died is taken over once stale.
		const md = uuid["docs/100%_done.md"];
		assert.deepEqual(await repo.claimTexts([{ uuid: md, etag: "etag-docs/100%_done.md" }]), [md]);
		await new Promise((r) => setTimeout(r, 5));
		assert.deepEqual(await repo.claimTexts([{ uuid: md, etag: "etag-docs/100%_done.md" }], 1), [md]);
	});

	it("stores a batch's words in one UPDATE, only for the files still at their claimed etag", async () => {
		const files = ["docs/Annual Report.pdf", "other/report-b.pdf", "docs/big.txt"].map((p) => uuid[p]);
		const [pdf, other, big] = files;
		assert.deepEqual((await repo.claimTexts(files.map((f) => ({ uuid: f, etag: `claim-${f}` })))).sort(), [...files].sort());
		const counted = countingStatements(db);
		const stored = await new SearchRepo(counted.db).setTexts([
			{ uuid: pdf, etag: `claim-${pdf}`, words: ["first"] },
			{ uuid: other, etag: "another-etag", words: ["stale"] },
			{ uuid: big, etag: `claim-${big}`, words: [] },
			{ uuid: "no-such-node", etag: "x", words: ["ghost"] },
			// Given twice: the last words count, as when each was written in turn.
			{ uuid: pdf, etag: `claim-${pdf}`, words: ["quarterly", "figures", "ünïcode"] },
		]);
		assert.equal(stored, 2, "the pdf and the empty text, not the stale etag nor the missing node");
		assert.equal(counted.count, 1, "one statement for the batch");
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "words", words: ["quarterly", "ünïcode"] } })), ["docs/Annual Report.pdf"]);
		assert.deepEqual(await all(repo, { candidates: { kind: "words", words: ["first"] } }), []);
		assert.deepEqual(await all(repo, { candidates: { kind: "words", words: ["stale"] } }), []);
		// Read (no text): not claimed again at that etag; the stale-etag file's claim still stands.
		assert.deepEqual(await repo.claimTexts([{ uuid: big, etag: `claim-${big}` }, { uuid: other, etag: `claim-${other}` }]), []);
		assert.equal(await repo.setTexts([]), 0);
	});

	it("lists the files whose text is unread or stale: text by name or mime metadata, small enough", async () => {
		const found: string[] = [];
		for await (const page of repo.staleTexts({ maxBytes: 1024 * 1024, exts: ["txt", "md"], staleAfterMs: 60_000, window: 2 })) found.push(...page.map((r) => r.path));
		// notes.txt's words are for etag-2, not the node's etag; 100%_done.md is claimed (recently); big.txt is too
		// big; the pdfs are no text.
		assert.deepEqual(found.sort(), ["docs/README", "docs/notes.txt"]);
	});

	it("reads a scope's subtree with the store's bounds, a page at a time", async () => {
		assert.deepEqual(pathsOf(await all(repo, { scopes: [{ ds: "ds1", prefix: "docs" }] }, 2)), ["docs/100%_done.md", "docs/Annual Report.pdf", "docs/README", "docs/big.txt", "docs/notes.txt"]);
		assert.deepEqual(pathsOf(await all(repo, { filter: { type: "COLLECTION" } })), ["docs", "other"]);
		assert.deepEqual(pathsOf(await all(repo, { filter: { minSize: 20, maxSize: 6000, type: "LEAF" } })), ["docs/Annual Report.pdf", "docs/notes.txt"]);
		assert.deepEqual(pathsOf(await all(repo, { filter: { etag: "etag-docs/README" } })), ["docs/README"]);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "uuids", uuids: [uuid["docs/README"], "nope"] } })), ["docs/README"]);
		assert.deepEqual(pathsOf(await all(repo, { candidates: { kind: "places", places: [{ ds: "ds1", path: "other/Rapport-B.pdf" }] } })), ["other/Rapport-B.pdf"]);
		assert.deepEqual(await all(repo, { scopes: [{ ds: "ds2", prefix: "" }] }), []);
	});

	it("keeps nothing of a deleted subtree", async () => {
		await nodes.deleteSubtree("ds1", "docs");
		assert.deepEqual(await all(repo, { candidates: { kind: "name", literal: "report" } }), []);
		assert.deepEqual(await all(repo, { candidates: { kind: "words", words: ["leak"] } }), []);
		const c = await repo.counts();
		assert.deepEqual(c, { names: 3, texts: 0 });
	});
});
