// Service descriptions (GET /config/ctl) from the files a node runs: the sources under tsx, and the compiled .js
// of `npm start`, which has no sources beside it (built by tsc with the build's settings; --noCheck, type-checking
// is tsc --noEmit's job).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeServiceFile, serviceDescriptions } from "../../lib/discovery/views";
import { availableServices } from "../../lib/runner";
import { PROJECT_ROOT } from "../../lib/paths";

describe("lib/discovery service descriptions", function () {
	this.timeout(60_000);

	it("reads the header comment of a compiled file after its \"use strict\"", () => {
		const compiled = '"use strict";\n/**\n * versions — file versioning: kept copies. More.\n */\nObject.defineProperty(exports, "__esModule", { value: true });\n';
		assert.equal(describeServiceFile("/virtual/versions.service.js", () => compiled), "file versioning");
		assert.equal(describeServiceFile("/virtual/none.service.js", () => '"use strict";\nconst a = 1;\n'), undefined);
	});

	it("describes every service of a build without sources as its sources do", () => {
		const out = mkdtempSync(join(tmpdir(), "cellar-build-"));
		try {
			execFileSync(join(PROJECT_ROOT, "node_modules", ".bin", "tsc"), ["-p", join(PROJECT_ROOT, "tsconfig.build.json"), "--outDir", out, "--sourceMap", "false", "--noCheck"], { cwd: PROJECT_ROOT, stdio: "pipe" });
			const sources = serviceDescriptions(join(PROJECT_ROOT, "services"), ".service.ts");
			const built = serviceDescriptions(join(out, "services"), ".service.js");
			const names = availableServices(join(PROJECT_ROOT, "services"));
			assert.ok(names.length > 10);
			for (const name of names) {
				assert.ok(sources(name), `${name} has a description`);
				assert.equal(built(name), sources(name), name);
			}
			assert.equal(built("../bin/start"), undefined, "a name is a service name, not a path");
		} finally {
			rmSync(out, { recursive: true, force: true });
		}
	});
});
