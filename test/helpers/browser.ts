// The browser side of test/web: Debian's Chromium driven by playwright-core, and the built front end (dist/web)
// the gateway serves. Under CI=true a missing Chromium fails the suite; elsewhere the suite skips and says why.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { defaultWebRoot } from "../../lib/web/public-page";

export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const PROJECT = join(__dirname, "..", "..");

/** Chromium, or a skipped suite (a failure under CI=true) when it is not installed. */
export async function launchChromium(suite: Mocha.Context): Promise<Browser> {
	if (!existsSync(CHROMIUM)) {
		const reason = `${CHROMIUM} is missing (apt-get install chromium, or set CHROMIUM_PATH)`;
		if (process.env.CI === "true") throw new Error(`The web tests need Chromium under CI=true: ${reason}`);
		console.log(`      skipping the web tests: ${reason}`);
		suite.skip();
	}
	// --no-sandbox: CI containers run as root, where Chromium's sandbox does not start.
	return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
}

function newestUnder(dir: string): number {
	let newest = 0;
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		const p = join(dir, e.name);
		newest = Math.max(newest, e.isDirectory() ? newestUnder(p) : statSync(p).mtimeMs);
	}
	return newest;
}

/** Builds the front end (as `npm run build` does) when dist/web is missing or older than web/ or the lib files it imports. */
export function ensureWebBuilt(): void {
	const index = join(defaultWebRoot(join(PROJECT, "lib", "web")), "index.html");
	const shared = ["lib/contracts/share.ts", "lib/web/texts.ts", "lib/share/minisite.ts"].map((f) => statSync(join(PROJECT, f)).mtimeMs);
	const sources = Math.max(newestUnder(join(PROJECT, "web")), ...shared);
	if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
	execFileSync(join(PROJECT, "node_modules", ".bin", "vite"), ["build", "--config", "web/vite.config.mts"], { cwd: PROJECT, stdio: "pipe" });
}
