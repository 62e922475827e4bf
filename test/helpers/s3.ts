// An AWS SDK client of a test node's /io, configured as the README tells S3 users: path-style, us-east-1, a
// token as access key and `gatewaysecret` as secret.
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";

export function s3Client(node: { url: string }, token: string, extra: Partial<S3ClientConfig> = {}): S3Client {
	return new S3Client({ endpoint: node.url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: token, secretAccessKey: "gatewaysecret" }, ...extra });
}
