// POST /a/search/nodes on a whole node: files uploaded through /io with the AWS SDK, folders made through
// /a/tree/create, and the index following uploads, deletes, restores, moves and metadata (events are async:
// every check polls with a short deadline).
import assert from "node:assert/strict";
import { S3Client, PutObjectCommand } from "@aws-sdk/client-s3";
import { useNode } from "../helpers/node";

interface Hit {
	Uuid: string;
	Path: string;
	Type: string;
	Size?: string;
	MTime?: string;
	MetaStore: Record<string, string>;
}

describe("HTTP: search", function () {
	this.timeout(60_000);
	const node = useNode();
	let sam: string;
	let tom: string;
	let s3: S3Client;
	const started = Math.floor(Date.now() / 1000) - 5;

	const search = async (Query: Record<string, unknown> | undefined, token = sam, extra: Record<string, unknown> = {}) => {
		const r = await node.api("POST", "/a/search/nodes", Query === undefined ? extra : { Query, ...extra }, token);
		assert.equal(r.status, 200, r.text);
		return { total: (r.body.Total ?? 0) as number, hits: (r.body.Results ?? []) as Hit[] };
	};
	const pathsOf = async (Query: Record<string, unknown>, token = sam) => (await search(Query, token)).hits.map((h) => h.Path).sort();
	/** Polls until the search answers `want` (events reach the index asynchronously). */
	const eventually = async (Query: Record<string, unknown>, want: string[], token = sam) => {
		let got: string[] = [];
		for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
			got = await pathsOf(Query, token);
			if (JSON.stringify(got) === JSON.stringify([...want].sort())) return;
		}
		assert.deepEqual(got, [...want].sort(), JSON.stringify(Query));
	};
	const put = (key: string, body: string | Buffer) => s3.send(new PutObjectCommand({ Bucket: "io", Key: key, Body: body }));

	before(async () => {
		for (const login of ["sam", "tom"]) assert.equal((await node.api("PUT", `/a/user/${login}`, { Password: "Search-Pass-123", Attributes: { profile: "standard" } }, node.admin)).status, 200);
		sam = await node.login("sam", "Search-Pass-123");
		tom = await node.login("tom", "Search-Pass-123");
		s3 = new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: sam, secretAccessKey: "gatewaysecret" } });
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/st/sub", Type: "COLLECTION" }], Recursive: true }, sam)).status, 200);
		await put("common-files/st/Quarterly Report.txt", "The quarterly revenue grew thanks to the Zeppelin project.\n");
		await put("common-files/st/beach-photo.jpg", Buffer.alloc(3000, 0xff));
		await put("common-files/st/sub/figures.csv", "month,amount\njanuary,12\n");
		await put("personal-files/diary.md", "Dear diary, the zeppelin landed in my garden.");
		await put("personal-files/.secret-report.txt", "hidden");
	});

	it("answers {Total: 0} without a Query, 401 without credentials, 400 on a bad query", async () => {
		const r = await node.api("POST", "/a/search/nodes", {}, sam);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Total ?? 0, 0);
		assert.equal(r.body.Results, undefined);
		assert.equal((await node.api("POST", "/a/search/nodes", { Query: { FileName: "x" } })).status, 401);
		assert.equal((await node.api("POST", "/a/search/nodes", { Query: { DurationDate: "yesterday" } }, sam)).status, 400);
		assert.equal((await node.api("POST", "/a/search/nodes", { Query: { PathPrefix: ["common-files/../x"] } }, sam)).status, 400);
		assert.equal((await node.api("POST", "/a/search/nodes", { Query: { Colour: "red" } }, sam)).status, 400);
	});

	it("finds uploaded files by name right after the upload, in user paths with workspace metas", async () => {
		await eventually({ FileName: "quarterly" }, ["common-files/st/Quarterly Report.txt"]);
		const { hits, total } = await search({ FileName: "REPORT" });
		assert.equal(total, 1, "the hidden file is not a result");
		const hit = hits[0];
		assert.equal(hit.Type, "LEAF");
		assert.equal(hit.Size, "59");
		assert.equal(JSON.parse(hit.MetaStore.name), "Quarterly Report.txt");
		assert.equal(typeof JSON.parse(hit.MetaStore.repository_id), "string");
		assert.equal(JSON.parse(hit.MetaStore.repository_display), "Common Files");
		const stat = await node.api("GET", `/a/tree/stat/${encodeURIComponent(hit.Path)}`, undefined, sam);
		assert.equal(stat.body.Node.Uuid, hit.Uuid);
	});

	it("filters by extension, folder prefix, type, size and date", async () => {
		await eventually({ Extension: "jpg|csv", PathPrefix: ["common-files/st"] }, ["common-files/st/beach-photo.jpg", "common-files/st/sub/figures.csv"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["common-files/st"] }), ["common-files/st/Quarterly Report.txt", "common-files/st/beach-photo.jpg", "common-files/st/sub", "common-files/st/sub/figures.csv"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["common-files/st"], Type: "COLLECTION" }), ["common-files/st/sub"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["common-files/st"], MinSize: "1000", MaxSize: "5000" }), ["common-files/st/beach-photo.jpg"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["personal-files"] }), ["personal-files/diary.md"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["common-files/st"], MinDate: String(started), Type: "LEAF" }), ["common-files/st/Quarterly Report.txt", "common-files/st/beach-photo.jpg", "common-files/st/sub/figures.csv"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["common-files/st"], MaxDate: String(started - 3600) }), []);
		assert.equal((await search({ PathPrefix: ["common-files/st"], DurationDate: "<1h", Type: "LEAF" })).total, 3);
		assert.equal((await search({ PathPrefix: ["common-files/st"], DurationDate: ">1h" })).total, 0);
	});

	it("finds words in the text of small text files", async () => {
		await eventually({ Content: "zeppelin" }, ["common-files/st/Quarterly Report.txt", "personal-files/diary.md"]);
		await eventually({ Content: "january" }, ["common-files/st/sub/figures.csv"]);
		assert.deepEqual(await pathsOf({ FileNameOrContent: "diary" }), ["personal-files/diary.md"]);
		// New content replaces the old words.
		await put("personal-files/diary.md", "Nothing happened today.");
		await eventually({ Content: "zeppelin" }, ["common-files/st/Quarterly Report.txt"]);
		await eventually({ Content: "happened" }, ["personal-files/diary.md"]);
	});

	it("pages with From/Size and a Total of every match", async () => {
		const nodes = Array.from({ length: 7 }, (_, i) => ({ Path: `common-files/pages/p${i}.log`, Type: "LEAF" }));
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/pages", Type: "COLLECTION" }] }, sam)).status, 200);
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: nodes }, sam)).status, 200);
		await eventually({ Extension: "log" }, nodes.map((n) => n.Path));
		const page = await search({ Extension: "log" }, sam, { From: 2, Size: 3 });
		assert.equal(page.total, 7);
		assert.deepEqual(page.hits.map((h) => h.Path), ["common-files/pages/p2.log", "common-files/pages/p3.log", "common-files/pages/p4.log"]);
	});

	it("follows deletes, restores and moves", async () => {
		const del = await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/st/sub" }] }, sam);
		assert.equal(del.status, 200, del.text);
		await eventually({ FileName: "figures" }, []);
		await eventually({ Content: "january" }, []);
		const res = await node.api("POST", "/a/tree/restore", { Nodes: [{ Path: "common-files/recycle_bin/sub" }] }, sam);
		assert.equal(res.status, 200, res.text);
		await eventually({ FileName: "figures" }, ["common-files/st/sub/figures.csv"]);
		const user = await node.broker.call("auth.resolve", { token: sam });
		await node.broker.call("tree.move", { From: "common-files/st/sub", To: "personal-files/moved-sub" }, { meta: { user } });
		await eventually({ FileName: "figures" }, ["personal-files/moved-sub/figures.csv"]);
		await eventually({ Content: "january" }, ["personal-files/moved-sub/figures.csv"]);
		assert.deepEqual(await pathsOf({ PathPrefix: ["common-files/st"], Type: "COLLECTION" }), []);
		const gone = await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/st/beach-photo.jpg" }], RemovePermanently: true }, sam);
		assert.equal(gone.status, 200, gone.text);
		await eventually({ Extension: "jpg" }, []);
	});

	it("matches metadata values with FreeString", async () => {
		const set = await node.api("POST", "/a/meta/set/common-files/st/Quarterly Report.txt", { Metadatas: [{ Namespace: "usermeta-tags", JsonMeta: JSON.stringify("Finance,Q3") }] }, sam);
		assert.equal(set.status, 200, set.text);
		await eventually({ FreeString: "+Meta.usermeta-tags:q3" }, ["common-files/st/Quarterly Report.txt"]);
		assert.deepEqual(await pathsOf({ FreeString: "+Meta.usermeta-tags:fin*" }), ["common-files/st/Quarterly Report.txt"]);
		assert.deepEqual(await pathsOf({ FreeString: "+Meta.usermeta-tags:q4" }), []);
	});

	it("shows nobody the files of a workspace they cannot read", async () => {
		await eventually({ FileName: "moved-sub" }, ["personal-files/moved-sub"]);
		// Tom has a personal-files workspace too, but it is his own folder: Sam's files are not in it.
		assert.deepEqual(await pathsOf({ FileName: "figures" }, tom), []);
		assert.deepEqual(await pathsOf({ Content: "happened" }, tom), []);
		assert.deepEqual(await pathsOf({ PathPrefix: ["personal-files"] }, tom), []);
		// Both see the common workspace.
		assert.deepEqual(await pathsOf({ FileName: "quarterly" }, tom), ["common-files/st/Quarterly Report.txt"]);
		await s3.send(new PutObjectCommand({ Bucket: "io", Key: "personal-files/sam-only.txt", Body: "x" }));
		await eventually({ FileName: "sam-only" }, ["personal-files/sam-only.txt"]);
		assert.deepEqual(await pathsOf({ FileName: "sam-only" }, tom), []);
	});

	it("reports the state of its index", async () => {
		const st: { Ready: boolean; Nodes: number; TextFiles: number } = await node.broker.call("search.status", {});
		assert.equal(st.Ready, true);
		assert.ok(st.Nodes > 10);
		assert.ok(st.TextFiles >= 3);
	});
});
