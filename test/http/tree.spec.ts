import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";
import { ZipWriter } from "../../lib/jobs/zip";
import { TarWriter } from "../../lib/jobs/tar";

describe("HTTP: the node tree", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	it("lists the caller's workspaces at the root", async () => {
		const r = await node.api("POST", "/a/tree/stats", { NodePaths: ["", "/*"] }, alice);
		assert.equal(r.status, 200, r.text);
		const slugs = r.body.Nodes.map((n: { Path: string }) => n.Path);
		assert.ok(slugs.includes("common-files") && slugs.includes("personal-files"), slugs.join(","));
		const ws = r.body.Nodes.find((n: { Path: string }) => n.Path === "common-files");
		assert.equal(JSON.parse(ws.MetaStore.ws_slug), "common-files");
	});

	it("creates folders (recursive) and empty files, stats and lists them", async () => {
		const c = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/a/b/c", Type: "COLLECTION" }], Recursive: true }, alice);
		assert.equal(c.status, 200, c.text);
		assert.equal(c.body.Children[0].Path, "common-files/a/b/c");
		const f = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/a/empty.txt", Type: "LEAF" }, { Path: "common-files/a/.hidden", Type: "LEAF" }] }, alice);
		assert.equal(f.status, 200, f.text);
		const stat = await node.api("GET", "/a/tree/stat/common-files%2Fa%2Fempty.txt", undefined, alice);
		assert.equal(stat.status, 200);
		assert.equal(stat.body.Node.Type, "LEAF");
		assert.equal(JSON.parse(stat.body.Node.MetaStore.name), "empty.txt");
		assert.equal(JSON.parse(stat.body.Node.MetaStore.mime), "text/plain");
		assert.equal(stat.body.Node.Mode, 0o644);
		const folder = await node.api("GET", "/a/tree/stat/common-files%2Fa%2F", undefined, alice);
		assert.equal(folder.body.Node.Type, "COLLECTION");
		assert.equal(folder.body.Node.Mode, 0o755);
		const list = await node.api("POST", "/a/meta/bulk/get", { NodePaths: ["common-files/a", "common-files/a/*"] }, alice);
		assert.equal(list.status, 200, list.text);
		assert.deepEqual(list.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/a", "common-files/a/b", "common-files/a/empty.txt"]);
		assert.equal(list.body.Nodes[0].MetaStore.ChildrenCount, "2");
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fnope", undefined, alice)).status, 404);
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/x/y", Type: "COLLECTION" }] }, alice)).status, 404);
	});

	it("paginates listings", async () => {
		const nodes = Array.from({ length: 12 }, (_, i) => ({ Path: `common-files/many/f${String(i).padStart(2, "0")}`, Type: "LEAF" }));
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/many", Type: "COLLECTION" }] }, alice)).status, 200);
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: nodes }, alice)).status, 200);
		const page = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/many/*"], Offset: 5, Limit: 5 }, alice);
		assert.equal(page.body.Nodes.length, 5);
		assert.equal(page.body.Nodes[0].Path, "common-files/many/f05");
		assert.deepEqual(page.body.Pagination, { Limit: 5, CurrentOffset: 5, Total: 12, CurrentPage: 2, TotalPages: 3, NextOffset: 10 });
	});

	it("deletes to the recycle bin, restores, and deletes permanently from the bin", async () => {
		const del = await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/a/empty.txt" }] }, alice);
		assert.equal(del.status, 200, del.text);
		assert.equal(del.body.DeleteJobs.length, 1);
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fa%2Fempty.txt", undefined, alice)).status, 404);
		const binned = await node.api("GET", "/a/tree/stat/common-files%2Frecycle_bin%2Fempty.txt", undefined, alice);
		assert.equal(binned.status, 200);
		assert.equal(JSON.parse(binned.body.Node.MetaStore.recycle_restore), "common-files/a/empty.txt");
		const restored = await node.api("POST", "/a/tree/restore", { Nodes: [{ Path: "common-files/recycle_bin/empty.txt" }] }, alice);
		assert.equal(restored.status, 200, restored.text);
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fa%2Fempty.txt", undefined, alice)).status, 200);
		await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/a/b" }] }, alice);
		const perm = await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/recycle_bin/b" }] }, alice);
		assert.equal(perm.status, 200);
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Frecycle_bin%2Fb", undefined, alice)).status, 404);
		assert.equal((await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files" }] }, alice)).status, 403);
	});

	it("lists in the order asked: by name, size or date, either way, and refuses an unknown order", async () => {
		const put = (k: string, body: string) => fetch(`${node.url}/io/${k}`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body });
		await put("common-files/sorted/b.txt", "bb");
		await put("common-files/sorted/c.txt", "c");
		await new Promise((r) => setTimeout(r, 1100)); // dates are in seconds
		await put("common-files/sorted/a.txt", "aaa");
		const order = async (extra: Record<string, unknown>) => {
			const r = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/sorted/*"], ...extra }, alice);
			assert.equal(r.status, 200, r.text);
			return r.body.Nodes.map((n: { Path: string }) => n.Path.split("/").pop());
		};
		assert.deepEqual(await order({}), ["a.txt", "b.txt", "c.txt"]);
		assert.deepEqual(await order({ SortDirDesc: true }), ["c.txt", "b.txt", "a.txt"]);
		assert.deepEqual(await order({ SortField: "size" }), ["c.txt", "b.txt", "a.txt"]);
		assert.deepEqual(await order({ SortField: "size", SortDirDesc: true }), ["a.txt", "b.txt", "c.txt"]);
		// b and c within a second or not, ties go by name: the orders are the same.
		assert.deepEqual(await order({ SortField: "mtime" }), ["b.txt", "c.txt", "a.txt"]);
		assert.deepEqual(await order({ SortField: "MTime", SortDirDesc: true }), ["a.txt", "c.txt", "b.txt"]);
		const pageDesc = await order({ SortDirDesc: true, Offset: 1, Limit: 1 });
		assert.deepEqual(pageDesc, ["b.txt"]);
		assert.deepEqual(await order({ SortField: "size", Offset: 2, Limit: 5 }), ["a.txt"]);
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/sorted/*"], SortField: "colour" }, alice)).status, 400);
	});

	it("lists the inside of an archive as folders, read-only, and reads its files, without extracting it", async () => {
		const chunks: Buffer[] = [];
		const z = new ZipWriter();
		z.output.on("data", (c: Buffer) => chunks.push(c));
		const ended = new Promise((r) => z.output.on("end", r));
		await z.addFile("readme.txt", "hello");
		await z.addFile("docs/guide.md", "# guide");
		await z.addFile("docs/img/logo.png", "png");
		await z.addDirectory("empty");
		await z.finish();
		await ended;
		assert.equal((await fetch(`${node.url}/io/common-files/arch/pack.zip`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: Buffer.concat(chunks) })).status, 200);
		const list = async (p: string) => node.api("POST", "/a/tree/stats", { NodePaths: [`${p}/*`] }, alice);
		const top = await list("common-files/arch/pack.zip");
		assert.equal(top.status, 200, top.text);
		assert.deepEqual(top.body.Nodes.map((n: { Path: string; Type: string }) => [n.Path, n.Type]), [
			["common-files/arch/pack.zip/docs", "COLLECTION"],
			["common-files/arch/pack.zip/empty", "COLLECTION"],
			["common-files/arch/pack.zip/readme.txt", "LEAF"],
		]);
		const readme = top.body.Nodes[2];
		assert.equal(readme.Size, "5");
		assert.equal(readme.MetaStore.node_readonly, "true");
		assert.equal(JSON.parse(readme.MetaStore.mime), "text/plain");
		const docs = await list("common-files/arch/pack.zip/docs");
		assert.deepEqual(docs.body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/arch/pack.zip/docs/guide.md", "common-files/arch/pack.zip/docs/img"]);
		assert.equal((await list("common-files/arch/pack.zip/nope")).status, 404);
		// An entry reads out of the archive through /io, as the listing shows it.
		const entry = await fetch(`${node.url}/io/common-files/arch/pack.zip/docs/guide.md`, { headers: { "X-Pydio-Bearer": alice } });
		assert.equal(entry.status, 200);
		assert.equal(await entry.text(), "# guide");
		assert.equal((await fetch(`${node.url}/io/common-files/arch/pack.zip/docs/missing.md`, { headers: { "X-Pydio-Bearer": alice } })).status, 404);
		assert.equal((await list("common-files/arch/pack.zip/readme.txt")).status, 400);
		// A tar.gz the same way.
		const t = new TarWriter({ gzip: true });
		const tchunks: Buffer[] = [];
		t.output.on("data", (c: Buffer) => tchunks.push(c));
		const tended = new Promise((r) => t.output.on("end", r));
		await t.addFile("src/main.ts", "code", 4);
		await t.finish();
		await tended;
		assert.equal((await fetch(`${node.url}/io/common-files/arch/src.tar.gz`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: Buffer.concat(tchunks) })).status, 200);
		assert.deepEqual((await list("common-files/arch/src.tar.gz/src")).body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/arch/src.tar.gz/src/main.ts"]);
		assert.equal(await (await fetch(`${node.url}/io/common-files/arch/src.tar.gz/src/main.ts`, { headers: { "X-Pydio-Bearer": alice } })).text(), "code");
		// Nothing was extracted: the folder holds the archives only.
		assert.deepEqual((await list("common-files/arch")).body.Nodes.map((n: { Path: string }) => n.Path), ["common-files/arch/pack.zip", "common-files/arch/src.tar.gz"]);
	});

	it("names what goes into the recycle bin, or back, so that nothing is overwritten and files keep their extension", async () => {
		const put = (k: string, body: string) => fetch(`${node.url}/io/${k}`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body });
		const del = (p: string) => node.api("POST", "/a/tree/delete", { Nodes: [{ Path: p }] }, alice);
		const names = async (p: string) => ((await node.api("POST", "/a/tree/stats", { NodePaths: [`${p}/*`] }, alice)).body.Nodes ?? []).map((n: { Path: string }) => n.Path.split("/").pop());
		for (const body of ["first", "second"]) {
			await put("common-files/bins/notes.txt", body);
			await del("common-files/bins/notes.txt");
			await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/bins/v1.2", Type: "COLLECTION" }], Recursive: true }, alice);
			await del("common-files/bins/v1.2");
		}
		const bin = await names("common-files/recycle_bin");
		for (const n of ["notes.txt", "notes-1.txt", "v1.2", "v1.2-1"]) assert.ok(bin.includes(n), `${n} in ${bin.join(", ")}`);
		const binned = await node.api("GET", "/a/tree/stat/common-files%2Frecycle_bin%2Fnotes-1.txt", undefined, alice);
		assert.equal(JSON.parse(binned.body.Node.MetaStore.mime), "text/plain");
		// Back to a name now taken: next to it.
		await put("common-files/bins/notes.txt", "third");
		assert.equal((await node.api("POST", "/a/tree/restore", { Nodes: [{ Path: "common-files/recycle_bin/notes-1.txt" }] }, alice)).status, 200);
		assert.deepEqual(await names("common-files/bins"), ["notes-1.txt", "notes.txt"]);
	});

	it("keeps users from writing into the recycle bin, by any route; taking things out of it is a move like any", async () => {
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/recycle_bin/x", Type: "COLLECTION" }] }, alice)).status, 403);
		const put = await fetch(`${node.url}/io/common-files/recycle_bin/y.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: "y" });
		assert.equal(put.status, 403);
		assert.match(await put.text(), /AccessDenied/);
		assert.equal((await fetch(`${node.url}/io/common-files/a/kept.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": alice }, body: "k" })).status, 200);
		const copy = await fetch(`${node.url}/io/common-files/recycle_bin/kept.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": alice, "x-amz-copy-source": "/io/common-files/a/kept.txt" } });
		assert.equal(copy.status, 403);
		const fine = await fetch(`${node.url}/io/common-files/a/copied.txt`, { method: "PUT", headers: { "X-Pydio-Bearer": alice, "x-amz-copy-source": "/io/common-files/a/kept.txt" } });
		assert.equal(fine.status, 200, "the same copy elsewhere is fine");
		const user = await node.broker.call("auth.resolve", { token: alice });
		await assert.rejects(node.broker.call("tree.copy", { From: "common-files/a/kept.txt", To: "common-files/recycle_bin/sub/kept.txt" }, { meta: { user } }), (e: { code?: number }) => e.code === 403);
		// Out of the bin: allowed.
		await node.api("POST", "/a/tree/delete", { Nodes: [{ Path: "common-files/a/kept.txt" }] }, alice);
		await node.broker.call("tree.move", { From: "common-files/recycle_bin/kept.txt", To: "common-files/a/back.txt" }, { meta: { user } });
		assert.equal((await node.api("GET", "/a/tree/stat/common-files%2Fa%2Fback.txt", undefined, alice)).status, 200);
	});

	it("keeps personal files personal", async () => {
		assert.equal((await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "personal-files/mine", Type: "COLLECTION" }] }, alice)).status, 200);
		const own = await node.api("POST", "/a/tree/stats", { NodePaths: ["personal-files/*"] }, alice);
		assert.deepEqual(own.body.Nodes.map((n: { Path: string }) => n.Path), ["personal-files/mine"]);
		const adm = await node.api("POST", "/a/tree/stats", { NodePaths: ["personal-files/*"] }, node.admin);
		assert.equal(adm.body.Nodes, undefined);
		const adminView = await node.api("POST", "/a/tree/admin/list", { Node: { Path: "personal/alice" } }, node.admin);
		assert.equal(adminView.status, 200, adminView.text);
		assert.deepEqual(adminView.body.Children.map((n: { Path: string }) => n.Path), ["personal/alice/mine"]);
		assert.equal((await node.api("POST", "/a/tree/admin/list", { Node: { Path: "personal" } }, alice)).status, 403);
	});

	it("refuses traversal and bad paths with 400", async () => {
		for (const p of ["common-files/../etc", "/common-files/x", "common-files/a\u0000b", "common-files/a\\b", `common-files/${"x".repeat(300)}`]) {
			const r = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: p, Type: "COLLECTION" }] }, alice);
			assert.equal(r.status, 400, `${JSON.stringify(p)} -> ${r.status} ${r.text}`);
		}
		assert.equal((await node.api("POST", "/a/tree/stats", { NodePaths: ["nowhere/*"] }, alice)).status, 404);
	});
});
