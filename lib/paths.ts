// Where the project's own files are, whether the code runs from its TypeScript sources (tsx: tests, dev) or
// compiled into dist/ (npm start): the nearest folder above this file that holds package.json.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

function findRoot(from: string): string {
	for (let dir = from; ; dir = dirname(dir)) {
		if (existsSync(join(dir, "package.json"))) return dir;
		if (dirname(dir) === dir) return from;
	}
}

export const PROJECT_ROOT = findRoot(__dirname);
