// Document templates through the real gateway: the listing (GET /a/templates) and files created from them
// (POST /a/tree/create with TemplateUUID), read back through stat and the /io gateway.
import assert from "node:assert/strict";
import { readZip } from "../helpers/zip";
import { createHash } from "node:crypto";
import { METHOD_STORE } from "../../lib/jobs/zip";
import { getTemplate } from "../../lib/templates";
import { useNode } from "../helpers/node";
import { addUser } from "../helpers/users";

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
const enc = (p: string) => encodeURIComponent(p);

interface RestTemplate {
	UUID: string;
	Label: string;
	Editable?: boolean;
	Node: { Node: { Path: string; Type: string; Size?: string; Etag: string } };
}

describe("HTTP: document templates", function () {
	this.timeout(30_000);
	const node = useNode();
	let alice: string;
	let templates: RestTemplate[];

	before(async () => {
		alice = await addUser(node, node.admin, "alice", "Alice-Pass-1234");
	});

	const stat = async (path: string) => node.api("GET", `/a/tree/stat/${enc(path)}`, undefined, alice);
	const download = async (path: string) => {
		const r = await fetch(`${node.url}/io/${path.split("/").map(enc).join("/")}`, { headers: { "X-Pydio-Bearer": alice } });
		assert.equal(r.status, 200, path);
		return Buffer.from(await r.arrayBuffer());
	};

	it("lists the templates to any logged-in user, and to nobody else", async () => {
		const r = await node.api("GET", "/a/templates", undefined, alice);
		assert.equal(r.status, 200, r.text);
		templates = r.body.Templates;
		assert.deepEqual(
			templates.map((t) => t.UUID),
			[
				"01-Microsoft Word.docx",
				"02-Microsoft Excel.xlsx",
				"03-Microsoft PowerPoint.pptx",
				"04-OpenDocument Text.odt",
				"05-OpenDocument Spreadsheet.ods",
				"06-OpenDocument Presentation.odp",
				"07-Text.txt",
				"08-Markdown.md",
			],
		);
		const word = templates[0];
		assert.equal(word.Label, "Microsoft Word Document");
		assert.equal(word.Editable, undefined); // false, omitted as Cells omits zero values
		assert.equal(word.Node.Node.Path, "01-Microsoft Word.docx");
		assert.equal(word.Node.Node.Type, "LEAF");
		assert.equal(word.Node.Node.Size, String(getTemplate(word.UUID)!.content.length)); // int64 as a string
		assert.equal(templates[6].Node.Node.Size, undefined); // the empty text file
		assert.deepEqual((await node.api("GET", "/a/templates?TemplateType=DOCUMENT", undefined, alice)).body.Templates, templates);
		const other = await node.api("GET", "/a/templates?TemplateType=FOLDER", undefined, alice);
		assert.equal(other.status, 200, other.text);
		assert.deepEqual(other.body.Templates ?? [], []);
		assert.equal((await node.api("GET", "/a/templates")).status, 401);
	});

	it("creates a file from each template, with the template's size, md5, mime and bytes", async () => {
		for (const t of templates) {
			const ext = t.UUID.slice(t.UUID.lastIndexOf("."));
			const path = `common-files/new/From template${ext}`;
			const c = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: path, Type: "LEAF" }], TemplateUUID: t.UUID, Recursive: true }, alice);
			assert.equal(c.status, 200, c.text);
			assert.equal(c.body.Children[0].Path, path);
			const want = getTemplate(t.UUID)!.content;
			const s = await stat(path);
			assert.equal(s.status, 200, s.text);
			assert.equal(s.body.Node.Type, "LEAF");
			assert.equal(Number(s.body.Node.Size ?? 0), want.length, t.UUID);
			assert.equal(s.body.Node.Etag, md5(want), t.UUID);
			assert.equal(s.body.Node.Etag, t.Node.Node.Etag);
			const got = await download(path);
			assert.deepEqual(got, want, t.UUID);
			if (ext === ".txt" || ext === ".md") {
				assert.equal(got.length, 0);
				continue;
			}
			const { entries, files } = await readZip(got);
			if (ext.startsWith(".od")) {
				assert.equal(entries[0].name, "mimetype");
				assert.equal(entries[0].method, METHOD_STORE);
				assert.equal(files.get("mimetype")!.toString(), JSON.parse(s.body.Node.MetaStore.mime));
				assert.ok(files.has("META-INF/manifest.xml") && files.has("content.xml"));
			} else {
				assert.ok(files.has("[Content_Types].xml") && files.has("_rels/.rels"));
				const main = { ".docx": "word/document.xml", ".xlsx": "xl/workbook.xml", ".pptx": "ppt/presentation.xml" }[ext]!;
				assert.ok(files.get(main)!.toString().startsWith("<?xml"), main);
				assert.match(JSON.parse(s.body.Node.MetaStore.mime), /^application\/vnd\.openxmlformats-officedocument\./);
			}
		}
		const list = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/new/*"] }, alice);
		assert.equal(list.body.Nodes.length, templates.length);
	});

	it("refuses an unknown template with 404 and creates nothing", async () => {
		const r = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/nope.docx", Type: "LEAF" }, { Path: "common-files/nope-dir", Type: "COLLECTION" }], TemplateUUID: "99-Nothing.docx" }, alice);
		assert.equal(r.status, 404, r.text);
		assert.equal(r.body.Code, "template.notfound");
		assert.equal((await stat("common-files/nope.docx")).status, 404);
		assert.equal((await stat("common-files/nope-dir")).status, 404);
	});

	it("does not create over an existing file (409), which keeps its content", async () => {
		const path = "common-files/new/From template.docx";
		const before = await stat(path);
		const r = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: path, Type: "LEAF" }], TemplateUUID: "02-Microsoft Excel.xlsx" }, alice);
		assert.equal(r.status, 409, r.text);
		const after = await stat(path);
		assert.equal(after.body.Node.Etag, before.body.Node.Etag);
		assert.equal(after.body.Node.Size, before.body.Node.Size);
	});

	it("creates folders as folders, whatever the template", async () => {
		const r = await node.api("POST", "/a/tree/create", { Nodes: [{ Path: "common-files/folder.docx", Type: "COLLECTION" }], TemplateUUID: "01-Microsoft Word.docx" }, alice);
		assert.equal(r.status, 200, r.text);
		const s = await stat("common-files/folder.docx");
		assert.equal(s.body.Node.Type, "COLLECTION");
		const children = await node.api("POST", "/a/tree/stats", { NodePaths: ["common-files/folder.docx/*"] }, alice);
		assert.deepEqual(children.body.Nodes ?? [], []);
	});
});
