// Verifies every request a webhook receiver logged (tests/tools/webhook_receiver.c writes
// DIR/requests.ndjson) with the reference Standard Webhooks implementation (npm
// standardwebhooks), independently of trainyard's own code:
//   node sw-verify-log.js REQUESTS.ndjson SECRET [PATH]
// Only requests to PATH (default: all) are checked. Prints "N verified"; exit 1 when any
// signature is rejected or a tampered body is accepted.
"use strict";
const fs = require("fs");
const { Webhook } = require("standardwebhooks");

const [file, secret, path] = process.argv.slice(2);
const wh = new Webhook(secret);
let ok = 0, failed = 0;
for (const line of fs.readFileSync(file, "utf8").split("\n")) {
  if (!line) continue;
  const r = JSON.parse(line);
  if (path && r.path !== path) continue;
  const headers = { "webhook-id": r.id, "webhook-timestamp": r.timestamp,
                    "webhook-signature": r.signature };
  try {
    wh.verify(r.body, headers);
    ok++;
  } catch (e) {
    failed++;
    console.error(`request ${r.n}: ${e.message}`);
  }
  try {
    wh.verify(r.body + " ", headers);
    failed++;
    console.error(`request ${r.n}: tampered body verified`);
  } catch (e) {
    /* expected */
  }
}
console.log(`${ok} verified`);
process.exit(failed || ok === 0 ? 1 : 0);
