import assert from "node:assert/strict";
import { decode, encode } from "../../lib/cells/codec";
import { definition, findOperation } from "../../lib/cells/spec";

describe("Cells JSON codec", () => {
	const node = definition("treeNode");
	const search = findOperation("POST", "/user")!;

	it("finds operations by route template in any spelling", () => {
		assert.equal(findOperation("GET", "/tree/stat/:Node")?.operationId, "HeadNode");
		assert.equal(findOperation("GET", "/config/*FullPath")?.operationId, "GetConfig");
		assert.equal(findOperation("POST", "/auth/token/personal")?.operationId, "GeneratePersonalAccessToken");
		assert.equal(findOperation("DELETE", "/config/oauth2clients/{ClientID}")?.operationId !== undefined, true);
	});

	it("encodes int64 as strings, enums as names and omits zero values", () => {
		const out = encode({ Uuid: "u", Path: "a/b", Size: 1024, MTime: 0, Type: "LEAF", MetaStore: {}, Etag: "" }, node.schema, node.defs);
		assert.deepEqual(out, { Uuid: "u", Path: "a/b", Size: "1024", Type: "LEAF" });
		assert.deepEqual(encode({ Type: 1 }, node.schema, node.defs), { Type: "LEAF" });
		assert.deepEqual(encode({ Type: "UNKNOWN" }, node.schema, node.defs), {});
	});

	it("drops fields the message does not have", () => {
		assert.deepEqual(encode({ Uuid: "u", PasswordHash: "secret" }, node.schema, node.defs), { Uuid: "u" });
	});

	it("decodes int64 strings and numbers, enum numbers and names, and drops nulls", () => {
		const out = decode({ Offset: "10", Limit: 5, Queries: null, Operation: 1 }, search.request, search.defs);
		assert.deepEqual(out, { Offset: 10, Limit: 5, Operation: "AND" });
	});

	it("refuses unknown fields and wrong types with a 400", () => {
		assert.throws(() => decode({ Nope: 1 }, search.request, search.defs), (e: { code: number; message: string }) => e.code === 400 && /Nope/.test(e.message));
		assert.throws(() => decode({ Offset: "ten" }, search.request, search.defs), (e: { code: number }) => e.code === 400);
		assert.throws(() => decode({ Operation: "XOR" }, search.request, search.defs), (e: { code: number }) => e.code === 400);
		assert.throws(() => decode({ Queries: [{ Login: 5 }] }, search.request, search.defs), (e: { code: number; message: string }) => e.code === 400 && /Queries\[0\]\.Login/.test(e.message));
	});
});
