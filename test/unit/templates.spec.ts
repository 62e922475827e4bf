// lib/templates on its own: every template is a valid document of its format (the project's zip reader and strict
// XML parser read it back), built once, the same bytes on every node.
import assert from "node:assert/strict";
import { readZip } from "../helpers/zip";
import { createHash } from "node:crypto";
import { posix } from "node:path";
import { METHOD_STORE } from "../../lib/jobs/zip";
import { parseXml, type XmlNode } from "../../lib/io/xml";
import { getTemplate, listTemplates } from "../../lib/templates";
import { packZip } from "../../lib/templates/pack";
import { docxParts } from "../../lib/templates/office";


function find(node: XmlNode, name: string): XmlNode[] {
	const out = node.name === name ? [node] : [];
	for (const c of node.children) out.push(...find(c, name));
	return out;
}

/** Every XML part parses (strictly) and has the expected root element. */
function xml(files: Map<string, Buffer>, name: string, root: string): XmlNode {
	const data = files.get(name);
	assert.ok(data, `${name} is missing`);
	assert.ok(data.toString("utf8").startsWith("<?xml"), `${name} has no XML declaration`);
	const doc = parseXml(data);
	assert.equal(doc.name, root, `${name}: root element`);
	return doc;
}

const OFFICE: Record<string, { ext: string; main: [string, string]; parts: string[] }> = {
	"01-Microsoft Word.docx": { ext: "docx", main: ["word/document.xml", "document"], parts: [] },
	"02-Microsoft Excel.xlsx": { ext: "xlsx", main: ["xl/workbook.xml", "workbook"], parts: ["xl/_rels/workbook.xml.rels", "xl/worksheets/sheet1.xml", "xl/styles.xml"] },
	"03-Microsoft PowerPoint.pptx": {
		ext: "pptx",
		main: ["ppt/presentation.xml", "presentation"],
		parts: ["ppt/slideMasters/slideMaster1.xml", "ppt/slideLayouts/slideLayout1.xml", "ppt/slides/slide1.xml", "ppt/theme/theme1.xml"],
	},
};
const ODF: Record<string, { type: string; body: string }> = {
	"04-OpenDocument Text.odt": { type: "application/vnd.oasis.opendocument.text", body: "text" },
	"05-OpenDocument Spreadsheet.ods": { type: "application/vnd.oasis.opendocument.spreadsheet", body: "spreadsheet" },
	"06-OpenDocument Presentation.odp": { type: "application/vnd.oasis.opendocument.presentation", body: "presentation" },
};

describe("document templates (lib/templates)", () => {
	it("lists every template as Cells' restTemplate, for DOCUMENT or no type only", () => {
		const list = listTemplates();
		assert.deepEqual(
			list.map((t) => t.UUID),
			[...Object.keys(OFFICE), ...Object.keys(ODF), "07-Text.txt", "08-Markdown.md"],
		);
		for (const t of list) {
			assert.ok(t.Label.length > 0);
			assert.equal(t.Editable, false);
			const content = getTemplate(t.UUID)!.content;
			assert.deepEqual(t.Node.Node, { Path: t.UUID, Type: "LEAF", Size: content.length, Etag: createHash("md5").update(content).digest("hex") });
		}
		assert.equal(list.find((t) => t.UUID === "01-Microsoft Word.docx")!.Label, "Microsoft Word Document");
		assert.deepEqual(listTemplates("DOCUMENT"), list);
		assert.deepEqual(listTemplates("document"), list);
		assert.deepEqual(listTemplates("FOLDER"), []);
		assert.equal(getTemplate("nope.docx"), undefined);
	});

	it("builds each template once, with the same bytes on every build (a fixed date, stored parts)", () => {
		assert.equal(getTemplate("01-Microsoft Word.docx")!.content, getTemplate("01-Microsoft Word.docx")!.content);
		assert.deepEqual(packZip(docxParts()), getTemplate("01-Microsoft Word.docx")!.content);
	});

	for (const [uuid, spec] of Object.entries(OFFICE)) {
		it(`${uuid}: a complete Office Open XML package`, async () => {
			const { files } = await readZip(getTemplate(uuid)!.content);
			xml(files, spec.main[0], spec.main[1]);
			for (const p of spec.parts) xml(files, p, p.endsWith(".rels") ? "Relationships" : parseXml(files.get(p)!).name);
			// Every part has a content type, and every relationship points at a part of the package.
			const types = xml(files, "[Content_Types].xml", "Types");
			const overrides = find(types, "Override").length;
			assert.ok(overrides >= 1);
			const raw = files.get("[Content_Types].xml")!.toString();
			for (const name of files.keys()) {
				if (name === "[Content_Types].xml" || name.endsWith(".rels")) continue;
				assert.ok(raw.includes(`PartName="/${name}"`), `${name} has no content type`);
			}
			for (const name of files.keys()) {
				if (!name.endsWith(".rels")) continue;
				xml(files, name, "Relationships");
				const base = posix.dirname(posix.dirname(name)); // _rels/x.rels describes the parts beside _rels/
				for (const m of files.get(name)!.toString().matchAll(/Target="([^"]+)"/g)) {
					const target = posix.normalize(posix.join(base, m[1]));
					assert.ok(files.has(target), `${name} points at a missing ${target}`);
				}
			}
			assert.equal(xml(files, "_rels/.rels", "Relationships").children.length >= 1, true);
		});
	}

	it("the Word document has a body with one empty paragraph", async () => {
		const { files } = await readZip(getTemplate("01-Microsoft Word.docx")!.content);
		const doc = xml(files, "word/document.xml", "document");
		assert.equal(find(doc, "body").length, 1);
		assert.equal(find(doc, "p").length, 1);
	});

	for (const [uuid, spec] of Object.entries(ODF)) {
		it(`${uuid}: an OpenDocument package, mimetype first, stored, no extra field`, async () => {
			const buf = getTemplate(uuid)!.content;
			const { entries, files } = await readZip(buf);
			assert.equal(entries[0].name, "mimetype");
			assert.equal(entries[0].method, METHOD_STORE);
			assert.equal(files.get("mimetype")!.toString(), spec.type);
			// Type sniffers read the name at byte 30 and the type at byte 38 of the archive.
			assert.equal(buf.subarray(30, 38).toString(), "mimetype");
			assert.equal(buf.subarray(38, 38 + spec.type.length).toString(), spec.type);
			const manifest = xml(files, "META-INF/manifest.xml", "manifest");
			const listed = find(manifest, "file-entry").length;
			assert.equal(listed, files.size - 1); // "/" plus every part but mimetype and the manifest
			const raw = files.get("META-INF/manifest.xml")!.toString();
			assert.ok(raw.includes(`manifest:full-path="/" manifest:version="1.2" manifest:media-type="${spec.type}"`));
			const content = xml(files, "content.xml", "document-content");
			assert.equal(find(content, spec.body).length, 1);
			if (files.has("styles.xml")) xml(files, "styles.xml", "document-styles");
		});
	}

	it("plain text and Markdown are empty files", () => {
		assert.equal(getTemplate("07-Text.txt")!.content.length, 0);
		assert.equal(getTemplate("08-Markdown.md")!.content.length, 0);
	});
});
