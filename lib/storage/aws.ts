// The AWS SDK, loaded when the first S3 datasource is used rather than with every node: it is ~20 MB of a node's
// ~100 MB resident memory, and many installations store everything on local disks.
import type * as ClientS3 from "@aws-sdk/client-s3";
import type * as LibStorage from "@aws-sdk/lib-storage";

let clientS3: typeof ClientS3 | undefined;
let libStorage: typeof LibStorage | undefined;

export function s3Sdk(): typeof ClientS3 {
	return (clientS3 ??= require("@aws-sdk/client-s3") as typeof ClientS3);
}

export function s3Upload(): typeof LibStorage {
	return (libStorage ??= require("@aws-sdk/lib-storage") as typeof LibStorage);
}
