"""A local S3 server for tessera's object-store tests: moto in server mode on 127.0.0.1.

Usage: moto_s3.py BUCKET

Starts moto with request authentication on (the first requests, which create an IAM user
with an access key allowed to do everything, go unauthenticated), creates BUCKET with that
user's key, prints one JSON line {"endpoint", "key", "secret"} and serves until its
standard input closes or it is killed. A line `stop` on standard input stops the server
(answered `stopped`) and `start` starts it again on the same port with the same buckets
and objects (answered `started`): moto keeps its state in this process. A line
`fail-puts N TEXT` makes every PUT whose path contains TEXT, from the N-th on, fail with
403 AccessDenied (answered `armed`); PUTs into tessera's hidden staging nodes are neither
counted nor failed. `heal` ends that (answered `healed`).
"""

import json
import os
import sys

# Authentication checks start after the 4 IAM calls below; read by moto at import.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402


class Faults:
    """A WSGI layer over moto's application that fails chosen PUTs (see the module docs)."""

    BODY = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
            b"<Message>planted failure</Message></Error>")

    def __init__(self):
        self.app = None
        self.text = None
        self.start = 0
        self.seen = 0

    def wrap(self, server):
        self.app = server._server.app
        server._server.app = self

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if (self.text is not None and environ.get("REQUEST_METHOD") == "PUT"
                and self.text in path and "tessera-staging" not in path):
            self.seen += 1
            if self.seen >= self.start:
                start_response("403 Forbidden", [("Content-Type", "application/xml"),
                                                 ("Content-Length", str(len(self.BODY)))])
                return [self.BODY]
        return self.app(environ, start_response)


def main(bucket):
    # moto talks on stdout; keep stdout for the lines the test reads.
    out, sys.stdout = sys.stdout, sys.stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    faults = Faults()
    faults.wrap(server)
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boot = dict(endpoint_url=endpoint, region_name="us-east-1",
                aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
    iam = boto3.client("iam", **boot)
    iam.create_user(UserName="tessera")
    policy = iam.create_policy(PolicyName="all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }))
    iam.attach_user_policy(UserName="tessera", PolicyArn=policy["Policy"]["Arn"])
    key = iam.create_access_key(UserName="tessera")["AccessKey"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id=key["AccessKeyId"],
                      aws_secret_access_key=key["SecretAccessKey"])
    s3.create_bucket(Bucket=bucket)
    print(json.dumps({"endpoint": endpoint, "key": key["AccessKeyId"],
                      "secret": key["SecretAccessKey"]}), file=out, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["fail-puts"] and len(words) == 3:
            faults.text, faults.start, faults.seen = words[2], int(words[1]), 0
            print("armed", file=out, flush=True)
        elif words == ["heal"]:
            faults.text = None
            print("healed", file=out, flush=True)
        elif line.strip() == "stop":
            server.stop()
            print("stopped", file=out, flush=True)
        elif line.strip() == "start":
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
            server.start()
            faults.wrap(server)
            print("started", file=out, flush=True)
    server.stop()


if __name__ == "__main__":
    main(sys.argv[1])
