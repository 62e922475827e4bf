// `GET /a/install/agreement`: the licence Cellar is distributed under. A LICENSE file at the root of the
// installation wins; otherwise the AGPL-3.0 notice below, which is what the licence asks every copy to carry.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../paths";

export const AGPL_NOTICE = `Cellar - a self-hosted file-sharing server compatible with Pydio Cells' REST API.
Copyright (C) the Cellar contributors.

This program is free software: you can redistribute it and/or modify it under the terms of the
GNU Affero General Public License as published by the Free Software Foundation, either version 3
of the License, or (at your option) any later version.

This program is distributed in the hope that it will be useful, but WITHOUT ANY WARRANTY; without
even the implied warranty of MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. See the GNU Affero
General Public License for more details.

You should have received a copy of the GNU Affero General Public License along with this program.
If not, see <https://www.gnu.org/licenses/agpl-3.0.html>.

Section 13 of the licence applies to network use: if you modify Cellar and let users interact with
your modified version over a network, you must offer those users the Corresponding Source of your
version, for example through a download link.
`;

export function agreementText(root = PROJECT_ROOT): string {
	for (const name of ["LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"]) {
		const file = join(root, name);
		if (existsSync(file)) {
			const text = readFileSync(file, "utf8");
			if (text.trim()) return text;
		}
	}
	return AGPL_NOTICE;
}
