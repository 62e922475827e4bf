// The scheduler's templates through the real gateway: job, action and selector templates created, replaced,
// listed and deleted; definitions naming unknown actions or broken selectors refused; the docs made from the
// catalog and the API documents; the playground's selectors and filters over given nodes and over the tree; and
// only administrators (401 without a token, 403 for a user).
import assert from "node:assert/strict";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

interface DocPiece {
	Name: string;
	Context?: string;
	Short?: string;
	Long?: string;
}

const tq = (q: Record<string, unknown>) => ({ "@type": "type.googleapis.com/tree.Query", ...q });

describe("HTTP: scheduler templates", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	const job = {
		Label: "Archive the reports",
		EventNames: ["NODE_CHANGE:0"],
		Actions: [
			{
				ID: "actions.archive.compress",
				Parameters: { format: "zip" },
				NodesFilter: { Query: { SubQueries: [tq({ Extension: "pdf", MinSize: "1024" })] } },
				ChainedActions: [{ ID: "actions.tree.copymove", Parameters: { type: "move", target: "common-files/archives" } }],
			},
		],
	};

	it("stores a job template under its name, replaces it, lists and deletes it", async () => {
		const put = await node.api("PUT", "/a/scheduler/templates/jobs/archive-reports", { Job: job }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.equal(put.body.Job.ID, "archive-reports");
		assert.equal(put.body.Job.Label, "Archive the reports");
		assert.equal(put.body.Job.Actions[0].NodesFilter.Query.SubQueries[0].MinSize, "1024");
		const again = await node.api("PUT", "/a/scheduler/templates/jobs/archive-reports", { Job: { ...job, Label: "Reports, archived" } }, node.admin);
		assert.equal(again.status, 200, again.text);
		await node.api("PUT", "/a/scheduler/templates/jobs/resync", { Job: { Actions: [{ ID: "datasource-resync", Parameters: { dsName: "pydiods1" } }] } }, node.admin);
		const list = await node.api("POST", "/a/scheduler/templates/jobs", {}, node.admin);
		assert.equal(list.status, 200, list.text);
		assert.deepEqual(list.body.Jobs.map((j: { ID: string; Label: string }) => [j.ID, j.Label]), [["archive-reports", "Reports, archived"], ["resync", "resync"]]);
		assert.equal((await node.api("DELETE", "/a/scheduler/templates/jobs/resync", undefined, node.admin)).body.Success, true);
		const gone = await node.api("DELETE", "/a/scheduler/templates/jobs/resync", undefined, node.admin);
		assert.equal(gone.status, 404, gone.text);
		assert.deepEqual((await node.api("POST", "/a/scheduler/templates/jobs", { All: true }, node.admin)).body.Jobs.map((j: { ID: string }) => j.ID), ["archive-reports"]);
	});

	it("refuses a job whose actions (chained ones too) are unknown, or that is not a job", async () => {
		const chained = structuredClone(job);
		chained.Actions[0].ChainedActions[0].ID = "actions.cmd.rm-rf";
		const bad = await node.api("PUT", "/a/scheduler/templates/jobs/bad", { Job: chained }, node.admin);
		assert.equal(bad.status, 400, bad.text);
		assert.match(bad.body.Title, /Job\.Actions\[0\]\.ChainedActions\[0\]\.ID "actions\.cmd\.rm-rf".*actions\.tree\.copymove/);
		for (const body of [{}, { Job: { Label: "nothing to run" } }, { Job: { Actions: [{ Label: "no id" }] } }, { Job: { Actions: "x" } }, { Job: { Actions: [{ ID: "actions.cmd.wget", Bogus: 1 }] } }]) {
			const r = await node.api("PUT", "/a/scheduler/templates/jobs/bad", body, node.admin);
			assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
		}
		const query = await node.api("PUT", "/a/scheduler/templates/jobs/bad", { Job: { Actions: [{ ID: "actions.cmd.wget", NodesSelector: { Query: { SubQueries: [tq({ Colour: "red" })] } } }] } }, node.admin);
		assert.equal(query.status, 400, query.text);
		assert.match(query.text, /unknown tree\.Query field\(s\) Colour/);
		assert.deepEqual((await node.api("POST", "/a/scheduler/templates/jobs", {}, node.admin)).body.Jobs.map((j: { ID: string }) => j.ID), ["archive-reports"]);
	});

	it("stores, replaces, lists and deletes action templates", async () => {
		const put = await node.api("PUT", "/a/scheduler/templates/actions", { Template: { Name: "zip-it", Action: { ID: "actions.archive.compress", Parameters: { format: "tar.gz" } } } }, node.admin);
		assert.equal(put.status, 200, put.text);
		assert.deepEqual(put.body.Template, { Name: "zip-it", Action: { ID: "actions.archive.compress", Parameters: { format: "tar.gz" } } });
		await node.api("PUT", "/a/scheduler/templates/actions", { Template: { Name: "zip-it", Action: { ID: "compress", Label: "Zip" } } }, node.admin);
		const list = await node.api("POST", "/a/scheduler/templates/actions", {}, node.admin);
		assert.deepEqual(list.body.Templates, [{ Name: "zip-it", Action: { ID: "compress", Label: "Zip" } }]);
		const unknown = await node.api("PUT", "/a/scheduler/templates/actions", { Template: { Name: "x", Action: { ID: "actions.nope" } } }, node.admin);
		assert.equal(unknown.status, 400, unknown.text);
		assert.equal((await node.api("PUT", "/a/scheduler/templates/actions", { Template: { Action: { ID: "compress" } } }, node.admin)).status, 400);
		assert.equal((await node.api("DELETE", "/a/scheduler/templates/actions/zip-it", undefined, node.admin)).body.Success, true);
		assert.equal((await node.api("DELETE", "/a/scheduler/templates/actions/zip-it", undefined, node.admin)).status, 404);
		assert.equal((await node.api("POST", "/a/scheduler/templates/actions", {}, node.admin)).body.Templates, undefined);
	});

	it("stores selector templates, lists them by kind or role, deletes them", async () => {
		const pdfs = { Name: "big-pdfs", Label: "Big PDFs", AsFilter: true, NodesSelector: { Query: { SubQueries: [tq({ Extension: "pdf", MinSize: 1_000_000 })] } } };
		const r = await node.api("PUT", "/a/scheduler/templates/selectors", { Template: pdfs }, node.admin);
		assert.equal(r.status, 200, r.text);
		assert.equal(r.body.Success, true);
		await node.api("PUT", "/a/scheduler/templates/selectors", { Template: { Name: "admins", IdmSelector: { Type: "User", All: true } } }, node.admin);
		const all = await node.api("POST", "/a/scheduler/templates/selectors", {}, node.admin);
		assert.deepEqual(all.body.Templates.map((t: { Name: string }) => t.Name), ["admins", "big-pdfs"]);
		assert.equal(all.body.Templates[1].NodesSelector.Query.SubQueries[0].MinSize, "1000000");
		assert.deepEqual((await node.api("POST", "/a/scheduler/templates/selectors", { Filter: "nodes" }, node.admin)).body.Templates.map((t: { Name: string }) => t.Name), ["big-pdfs"]);
		assert.deepEqual((await node.api("POST", "/a/scheduler/templates/selectors", { Filter: "IdmSelector" }, node.admin)).body.Templates.map((t: { Name: string }) => t.Name), ["admins"]);
		assert.deepEqual((await node.api("POST", "/a/scheduler/templates/selectors", { Filter: "filter" }, node.admin)).body.Templates.map((t: { Name: string }) => t.Name), ["big-pdfs"]);
		assert.equal((await node.api("POST", "/a/scheduler/templates/selectors", { Filter: "colour" }, node.admin)).status, 400);
		// One selector per template, and a nodes selector that compiles.
		assert.equal((await node.api("PUT", "/a/scheduler/templates/selectors", { Template: { Name: "two", NodesSelector: { All: true }, IdmSelector: { All: true } } }, node.admin)).status, 400);
		assert.equal((await node.api("PUT", "/a/scheduler/templates/selectors", { Template: { Name: "none" } }, node.admin)).status, 400);
		const broken = await node.api("PUT", "/a/scheduler/templates/selectors", { Template: { Name: "broken", NodesSelector: { Query: { SubQueries: [tq({ DurationDate: "yesterday" })] } } } }, node.admin);
		assert.equal(broken.status, 400, broken.text);
		assert.equal((await node.api("DELETE", "/a/scheduler/templates/selectors/admins", undefined, node.admin)).body.Success, true);
		assert.equal((await node.api("DELETE", "/a/scheduler/templates/selectors/admins", undefined, node.admin)).status, 404);
	});

	it("documents the actions with their parameters and the selectors' fields", async () => {
		const actions = await node.api("GET", "/a/scheduler/templates/docs/actions", undefined, node.admin);
		assert.equal(actions.status, 200, actions.text);
		assert.equal(actions.body.Type, "actions");
		const byName = new Map<string, DocPiece>(actions.body.Docs.map((d: DocPiece) => [d.Name, d]));
		for (const id of ["actions.tree.copymove", "actions.archive.compress", "actions.archive.extract", "actions.cmd.resync", "actions.cmd.wget", "copy", "extract"]) assert.ok(byName.has(id), id);
		assert.match(byName.get("actions.tree.copymove")!.Long!, /type \(select, mandatory, one of copy\|move\).*target \(string, mandatory\)/);
		assert.match(byName.get("compress")!.Long!, /format \(select, one of zip\|tar\|tar\.gz, default zip\)/);
		const sel = await node.api("GET", "/a/scheduler/templates/docs/selectors", undefined, node.admin);
		assert.equal(sel.status, 200, sel.text);
		const fields = new Map<string, DocPiece>(sel.body.Docs.filter((d: DocPiece) => d.Context === "tree.Query").map((d: DocPiece) => [d.Name, d]));
		assert.match(fields.get("Extension")!.Short!, /extension/i);
		assert.match(fields.get("Extension")!.Long!, /Evaluated by the playground/);
		assert.match(fields.get("Content")!.Long!, /not evaluated by the playground/);
		assert.match(fields.get("MinSize")!.Long!, /Type: integer/);
		assert.ok(sel.body.Docs.some((d: DocPiece) => d.Context === "NodesSelector" && d.Name === "Pathes"));
		const unknown = await node.api("GET", "/a/scheduler/templates/docs/widgets", undefined, node.admin);
		assert.equal(unknown.status, 400, unknown.text);
		assert.match(unknown.text, /selectors.*actions/);
	});

	const nodes = [
		{ Uuid: "1", Path: "common-files/reports/q1.pdf", Type: "LEAF", Size: "2048", MTime: "1700000000" },
		{ Uuid: "2", Path: "common-files/reports/q2.PDF", Type: "LEAF", Size: "512", MTime: "1700100000" },
		{ Uuid: "3", Path: "common-files/reports/notes.txt", Type: "LEAF", Size: "4096", MTime: "1700200000", MetaStore: { "usermeta-tags": '"urgent,finance"' } },
		{ Uuid: "4", Path: "common-files/reports/old", Type: "COLLECTION", MTime: "1600000000" },
	];
	const play = async (code: unknown, input?: unknown, mime = "application/json") => {
		const r = await node.api("POST", "/a/scheduler/templates/playground", { Code: typeof code === "string" ? code : JSON.stringify(code), CodeMime: mime, ...(input ? { Input: input } : {}) }, node.admin);
		return { ...r, out: r.status === 200 ? (JSON.parse(r.body.Output) as { Nodes?: { Uuid: string; Path: string; Size?: string }[] }) : undefined };
	};
	const uuids = (r: { out?: { Nodes?: { Uuid: string }[] } }) => (r.out?.Nodes ?? []).map((n) => n.Uuid);

	it("plays selectors and filters over the given nodes", async () => {
		const pdf = await play({ NodesFilter: { Query: { SubQueries: [tq({ Extension: "pdf" })] } } }, { Nodes: nodes });
		assert.equal(pdf.status, 200, pdf.text);
		assert.deepEqual(uuids(pdf), ["1", "2"]);
		assert.equal(pdf.out!.Nodes![0].Size, "2048", "Cells JSON: int64 as strings");
		assert.equal(pdf.body.CodeMime, "application/json");
		const big = await play({ Query: { Operation: "AND", SubQueries: [tq({ Extension: "pdf" }), tq({ MinSize: "1000" })] } }, { Nodes: nodes });
		assert.deepEqual(uuids(big), ["1"]);
		const either = await play({ Query: { SubQueries: [tq({ FileName: "q*" }), tq({ Type: "COLLECTION" })] } }, { Nodes: nodes });
		assert.deepEqual(uuids(either), ["1", "2", "4"]);
		const notOld = await play({ NodesSelector: { Query: { SubQueries: [tq({ MaxDate: "1650000000", Not: true })] }, Range: { OrderBy: "size", OrderDir: "desc", Limit: "2" } } }, { Nodes: nodes });
		assert.deepEqual(uuids(notOld), ["3", "1"]);
		const tagged = await play({ NodesFilter: { Query: { SubQueries: [tq({ FreeString: "+Meta.usermeta-tags:urgent" })] } } }, { Nodes: nodes });
		assert.deepEqual(uuids(tagged), ["3"]);
		const under = await play({ Query: { SubQueries: [tq({ PathPrefix: ["common-files/reports"], PathDepth: -1, Type: "LEAF" })] } }, { Nodes: nodes });
		assert.deepEqual(uuids(under), ["1", "2", "3"]);
		const all = await play({ All: true, Pathes: ["nowhere"] }, { Nodes: nodes });
		assert.deepEqual(uuids(all), ["1", "2", "3", "4"]);
		const none = await play({ NodesFilter: { Pathes: ["common-files/reports/q1.pdf"] } }, { Nodes: nodes });
		assert.deepEqual(uuids(none), ["1"]);
	});

	it("plays a selector over the tree as the caller lists it", async () => {
		for (const [name, body] of [["a.txt", "hello"], ["b.md", "# b"], ["c.txt", "x".repeat(100)]]) {
			const r = await node.io("PUT", `common-files/play/${name}`, node.admin, body);
			assert.equal(r.status, 200, name);
		}
		const r = await play({ Pathes: ["common-files/play/*"], Query: { SubQueries: [tq({ Extension: "txt" })] }, Range: { OrderBy: "name" } });
		assert.equal(r.status, 200, r.text);
		assert.deepEqual(r.out!.Nodes!.map((n) => n.Path), ["common-files/play/a.txt", "common-files/play/c.txt"]);
		const big = await play({ Pathes: ["common-files/play/a.txt", "common-files/play/c.txt"], Query: { SubQueries: [tq({ MinSize: 50 })] } });
		assert.deepEqual(big.out!.Nodes!.map((n) => n.Path), ["common-files/play/c.txt"]);
	});

	it("refuses what the playground does not evaluate, saying what it does", async () => {
		const js = await play("console.log(1)", { Nodes: nodes }, "application/javascript");
		assert.equal(js.status, 400, js.text);
		assert.match(js.text, /not supported.*evaluates JSON/);
		const tpl = await play("{{ .Input.Nodes }}", { Nodes: nodes });
		assert.equal(tpl.status, 400, tpl.text);
		const content = await play({ Query: { SubQueries: [tq({ Content: "invoice" })] } }, { Nodes: nodes });
		assert.equal(content.status, 400, content.text);
		assert.match(content.text, /Content need the search index.*evaluates FileName/);
		const idm = await play({ IdmSelector: { All: true } }, { Nodes: nodes });
		assert.equal(idm.status, 400, idm.text);
		assert.match(idm.text, /IdmSelector cannot be evaluated here/);
		assert.equal((await play({ NodesFilter: { All: true } })).status, 400, "a filter without input");
		assert.equal((await play({ Query: { SubQueries: [tq({ Extension: "pdf" })] } })).status, 400, "nothing to select from");
		assert.equal((await play({ Range: { Limit: "{{.Limit}}" } }, { Nodes: nodes })).status, 400);
		assert.equal((await play("")).status, 400);
	});

	it("answers administrators only", async () => {
		const calls: [string, string, unknown][] = [
			["POST", "/a/scheduler/templates/jobs", {}],
			["PUT", "/a/scheduler/templates/jobs/x", { Job: job }],
			["DELETE", "/a/scheduler/templates/jobs/archive-reports", undefined],
			["POST", "/a/scheduler/templates/actions", {}],
			["PUT", "/a/scheduler/templates/actions", { Template: { Name: "x", Action: { ID: "copy" } } }],
			["DELETE", "/a/scheduler/templates/actions/x", undefined],
			["POST", "/a/scheduler/templates/selectors", {}],
			["PUT", "/a/scheduler/templates/selectors", { Template: { Name: "x", NodesSelector: { All: true } } }],
			["DELETE", "/a/scheduler/templates/selectors/big-pdfs", undefined],
			["GET", "/a/scheduler/templates/docs/actions", undefined],
			["POST", "/a/scheduler/templates/playground", { Code: '{"All":true}', Input: { Nodes: nodes } }],
		];
		for (const [method, path, body] of calls) {
			assert.equal((await node.api(method, path, body)).status, 401, `${method} ${path} anonymous`);
			assert.equal((await node.api(method, path, body, alice)).status, 403, `${method} ${path} as a user`);
		}
		assert.deepEqual((await node.api("POST", "/a/scheduler/templates/jobs", {}, node.admin)).body.Jobs.map((j: { ID: string }) => j.ID), ["archive-reports"]);
	});
});
