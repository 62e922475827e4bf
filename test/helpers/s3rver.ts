// An in-process s3rver (S3 clone) on a random port with a temp directory, for storage tests.
// s3rver ships no types: it is loaded with require() and typed through the small interface below.
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";

interface S3rverInstance {
	run(): Promise<AddressInfo>;
	close(): Promise<void>;
	httpServer?: Server;
}
type S3rverCtor = new (opts: { port: number; address: string; directory: string; silent: boolean; resetOnClose?: boolean }) => S3rverInstance;

export interface TestS3 {
	endpoint: string;
	accessKeyId: "S3RVER";
	secretAccessKey: "S3RVER";
	directory: string;
	createBucket(name: string): Promise<void>;
	stop(): Promise<void>;
}

export async function startS3rver(): Promise<TestS3> {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const S3rver = require("s3rver") as S3rverCtor;
	const directory = mkdtempSync(join(tmpdir(), "cellar-s3rver-"));
	const server = new S3rver({ port: 0, address: "127.0.0.1", directory, silent: true });
	const { port } = await server.run();
	const endpoint = `http://127.0.0.1:${port}`;
	const client = new S3Client({
		endpoint,
		region: "us-east-1",
		forcePathStyle: true,
		credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
		requestChecksumCalculation: "WHEN_REQUIRED",
		responseChecksumValidation: "WHEN_REQUIRED",
	});
	return {
		endpoint,
		accessKeyId: "S3RVER",
		secretAccessKey: "S3RVER",
		directory,
		async createBucket(name: string) {
			await client.send(new CreateBucketCommand({ Bucket: name }));
		},
		async stop() {
			client.destroy();
			// Keep-alive sockets of SDK clients would hold close() open.
			server.httpServer?.closeAllConnections();
			await server.close();
			rmSync(directory, { recursive: true, force: true });
		},
	};
}
