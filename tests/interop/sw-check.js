// Cross-checks trainyard's Standard Webhooks signatures with the reference implementation
// (npm standardwebhooks). Reads DIR/sw-ours.json written by test_trigger_interop.c:
//   [{secret, id, timestamp, body, signature}]  -> each must verify here;
// then signs the same bodies with fresh ids and writes DIR/sw-theirs.json for the C side to
// verify. Exit status 1 when any of ours fails.
"use strict";
const fs = require("fs");
const path = require("path");
const { Webhook } = require("standardwebhooks");

const dir = process.argv[2];
const ours = JSON.parse(fs.readFileSync(path.join(dir, "sw-ours.json"), "utf8"));
let failed = 0;
const theirs = [];
ours.forEach((v, i) => {
  const wh = new Webhook(v.secret);
  const headers = {
    "webhook-id": v.id,
    "webhook-timestamp": String(v.timestamp),
    "webhook-signature": v.signature,
  };
  try {
    wh.verify(v.body, headers);
  } catch (e) {
    failed++;
    console.error(`sw-check: our signature ${i} rejected: ${e.message}`);
  }
  // A tampered body must not verify, or the check above proves nothing.
  try {
    wh.verify(v.body + " ", headers);
    failed++;
    console.error(`sw-check: tampered body ${i} verified`);
  } catch (e) {
    /* expected */
  }
  const id = `msg_node${i}`;
  const ts = new Date();
  theirs.push({ secret: v.secret, id, timestamp: Math.floor(ts.getTime() / 1000), body: v.body,
                signature: wh.sign(id, ts, v.body) });
});
fs.writeFileSync(path.join(dir, "sw-theirs.json"), JSON.stringify(theirs));
console.log(`sw-check: ${ours.length - failed}/${ours.length} of our signatures verified`);
process.exit(failed ? 1 : 0);
